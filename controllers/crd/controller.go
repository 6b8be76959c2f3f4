// Package crd names, establishes and cleans up CustomResourceDefinitions:
// the work of upstream's apiextensions naming, establishing and CRD
// finalizer controllers, as one client of the API.
//
// A new or renamed CRD has its requested names checked against the names
// other CRDs of its group have accepted (status.acceptedNames and the
// NamesAccepted condition), and is then Established. A deleted CRD (the
// API gives it the customresourcecleanup finalizer and Terminating=True)
// has its custom resources deleted through the dynamic client
// (InstanceDeletionInProgress), is marked InstanceDeletionCompleted, and
// loses its finalizer once its resource is no longer served, which lets
// the CRD go.
//
// Serving is not this package's job: the API server follows the CRD
// objects and serves a CRD's resource from the moment it is Established,
// refuses creates once it is Terminating, and stops serving it once its
// instances are gone (InstanceDeletionCompleted). kite.Start always runs a
// Controller, since CRDs are part of serving the API.
package crd

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

// FieldManager is the field manager of the Controller's status writes.
const FieldManager = "kite-crd-controller"

// Options configure a Controller.
type Options struct {
	// Client reads and writes CRDs, e.g.
	// clientset.ApiextensionsV1(). Required.
	Client apiextensionsclient.ApiextensionsV1Interface
	// Dynamic lists and deletes custom resources. Required.
	Dynamic dynamic.Interface
	// Retry is how soon a deleted CRD whose custom resources are still
	// going (finalizers of their own) is looked at again; 0 means one
	// second.
	Retry time.Duration
	// Unserved deletes the custom resources of a deleted CRD that serves
	// no version, which no client can reach; nil leaves them (in etcd)
	// when the controller runs away from the server.
	Unserved UnservedDeleter
}

// UnservedDeleter deletes the custom resources of a deleted CRD none of
// whose versions is served, through the server's storage, and returns how
// many are left (held by finalizers of their own).
type UnservedDeleter interface {
	DeleteUnserved(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (left int, err error)
}

// Controller names, establishes and cleans up CRDs. Run drives it.
type Controller struct {
	client  apiextensionsclient.CustomResourceDefinitionInterface
	dynamic dynamic.Interface
	retry   time.Duration
	// unserved is Options.Unserved.
	unserved UnservedDeleter
	loop     *controller.Loop[string]
	queue    *workqueue.Queue[string]
	crds     *informer.Informer[*apiextensionsv1.CustomResourceDefinition]
	written  writes
	groups   groupLocks
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil || opts.Dynamic == nil {
		return nil, fmt.Errorf("crd controller: Client and Dynamic are required")
	}
	c := &Controller{
		client:   opts.Client.CustomResourceDefinitions(),
		dynamic:  opts.Dynamic,
		retry:    opts.Retry,
		unserved: opts.Unserved,
		queue:    workqueue.New[string](workqueue.Options{}),
		written:  writes{m: map[string]*apiextensionsv1.CustomResourceDefinition{}},
	}
	if c.retry == 0 {
		c.retry = time.Second
	}
	var err error
	c.crds, err = informer.New(informer.Options[*apiextensionsv1.CustomResourceDefinition]{
		Name:          "customresourcedefinitions",
		ListerWatcher: listwatch.FromTypedClient(c.client, nil),
		Handlers: informer.Handlers[*apiextensionsv1.CustomResourceDefinition]{
			OnAdd: func(crd *apiextensionsv1.CustomResourceDefinition) { c.queue.Add(crd.Name) },
			OnUpdate: func(old, crd *apiextensionsv1.CustomResourceDefinition) {
				c.queue.Add(crd.Name)
				if !apiequality.Semantic.DeepEqual(old.Status.AcceptedNames, crd.Status.AcceptedNames) {
					c.queueGroup(crd) // names given up may be free now
				}
			},
			OnDelete: func(crd *apiextensionsv1.CustomResourceDefinition) {
				c.written.forget(crd.Name)
				c.queueGroup(crd) // its names are free now
			},
		},
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[string]{Name: "crd-controller", Queue: c.queue, Informers: []controller.Informer{c.crds}, Workers: workers, Sync: c.sync}
	return c, nil
}

// workers is how many CRDs are worked on at once: CRDs installed
// together (kite.Options.CRDs, an operator's manifests) are established
// in parallel, each a few round trips.
const workers = 4

// Run works until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once the CRDs are listed and none is queued or being
// worked on (one waiting for its custom resources to go is not).
func (c *Controller) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

// sync brings one CRD along. An error retries it after the key's
// growing delay (a moment at first).
func (c *Controller) sync(ctx context.Context, name string) error {
	crd := c.current(name)
	if crd == nil {
		return nil
	}
	if crd.DeletionTimestamp != nil {
		if !apihelpers.CRDHasFinalizer(crd, apiextensionsv1.CustomResourceCleanupFinalizer) {
			return nil
		}
		return c.finalize(ctx, crd)
	}
	crd, err := c.acceptNames(ctx, crd)
	if crd == nil || err != nil {
		return err
	}
	if next := crd.DeepCopy(); establish(next) {
		_, err = c.writeStatus(ctx, next)
	}
	return err
}

// acceptNames is upstream's naming controller: it writes the names and
// conditions acceptNames decides, if they differ from what crd has, and
// queues the rest of the group, whose names may depend on the change. It
// returns the CRD as written, or nil when the write lost to another
// (whose event queues the CRD again).
func (c *Controller) acceptNames(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (*apiextensionsv1.CustomResourceDefinition, error) {
	if apiequality.Semantic.DeepEqual(crd.Spec.Names, crd.Status.AcceptedNames) {
		return crd, nil
	}
	// The decision reads the names the others of the group accepted:
	// two of a group are never decided at once.
	mu := c.groups.of(crd.Spec.Group)
	mu.Lock()
	defer mu.Unlock()
	names, accepted, established := acceptNames(crd, c.group(crd.Spec.Group))
	if apiequality.Semantic.DeepEqual(crd.Status.AcceptedNames, names) &&
		apihelpers.IsCRDConditionEquivalent(&accepted, apihelpers.FindCRDCondition(crd, apiextensionsv1.NamesAccepted)) {
		return crd, nil
	}
	next := crd.DeepCopy()
	next.Status.AcceptedNames = names
	apihelpers.SetCRDCondition(next, accepted)
	apihelpers.SetCRDCondition(next, established)
	out, err := c.writeStatus(ctx, next)
	if out != nil {
		c.queueGroup(out)
	}
	return out, err
}

// writeStatus writes crd's status and remembers what it wrote, so that
// the next decisions see it before the watch brings it. A conflict or a
// CRD gone is no error: the watch brings what happened instead, and
// writeStatus returns nil.
func (c *Controller) writeStatus(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (*apiextensionsv1.CustomResourceDefinition, error) {
	out, err := c.client.UpdateStatus(ctx, crd, metav1.UpdateOptions{FieldManager: FieldManager})
	switch {
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("write status of CRD %s: %w", crd.Name, err)
	}
	c.written.put(out)
	return out, nil
}

// current returns the CRD named name as last seen, by the watch or by a
// write of ours it has not brought yet; nil when it is gone.
func (c *Controller) current(name string) *apiextensionsv1.CustomResourceDefinition {
	cached, ok := c.crds.Store().Get(name)
	if !ok {
		return nil
	}
	return c.written.newer(cached)
}

// group returns the CRDs of group as last seen.
func (c *Controller) group(group string) []apiextensionsv1.CustomResourceDefinition {
	var out []apiextensionsv1.CustomResourceDefinition
	for _, crd := range c.crds.Store().List() {
		if crd.Spec.Group == group {
			out = append(out, *c.written.newer(crd))
		}
	}
	return out
}

// queueGroup queues the other CRDs of crd's group.
func (c *Controller) queueGroup(crd *apiextensionsv1.CustomResourceDefinition) {
	for _, other := range c.crds.Store().List() {
		if other.Spec.Group == crd.Spec.Group && other.Name != crd.Name {
			c.queue.Add(other.Name)
		}
	}
}

// groupLocks serialize the naming decisions of a group; groups share a
// lock when their names hash alike, which only serializes more.
type groupLocks [16]sync.Mutex

func (g *groupLocks) of(group string) *sync.Mutex {
	h := fnv.New32a()
	h.Write([]byte(group))
	return &g[h.Sum32()%uint32(len(g))]
}

// writes are the CRDs as the Controller last wrote them, kept until the
// watch brings that version or a newer one: upstream's naming controller
// keeps the same (a mutation cache), without which two CRDs decided one
// after the other could both take a name.
type writes struct {
	mu sync.Mutex
	m  map[string]*apiextensionsv1.CustomResourceDefinition
}

func (w *writes) put(crd *apiextensionsv1.CustomResourceDefinition) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.m[crd.Name] = crd
}

func (w *writes) forget(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, name)
}

// newer returns the written version of cached's CRD if it is newer than
// cached, else cached (and forgets the write, which the watch has
// brought).
func (w *writes) newer(cached *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	w.mu.Lock()
	defer w.mu.Unlock()
	mine := w.m[cached.Name]
	if mine == nil {
		return cached
	}
	if mine.UID == cached.UID && revision(mine) > revision(cached) {
		return mine
	}
	delete(w.m, cached.Name)
	return cached
}

// revision is an object's resourceVersion as a number (an etcd revision,
// as in kube-apiserver); 0 when it is not one.
func revision(crd *apiextensionsv1.CustomResourceDefinition) uint64 {
	rv, _ := strconv.ParseUint(crd.ResourceVersion, 10, 64)
	return rv
}
