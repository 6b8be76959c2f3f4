// Package statefulset runs StatefulSets: the job of
// kube-controller-manager's statefulset controller.
//
// Each pod has a stable name <set>-<ordinal> (from spec.ordinals.start)
// and its own claims <template>-<set>-<ordinal>, made before the pod and
// kept when it goes unless persistentVolumeClaimRetentionPolicy says
// Delete. The decision (Decide) is upstream's updateStatefulSet; this
// runner reads the caches, keeps the set's history in ControllerRevisions
// (controller-revision-hash on each pod, currentRevision/updateRevision,
// collisionCount), carries out the plan and writes status. Expectations
// hold a set back until the watch shows its own pod creations and
// deletions, so a slow watch never makes it act twice on one ordinal.
package statefulset

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/events"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

var kind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

const namespaceIndex = informer.NamespaceIndex

// writeTimeout bounds a write seen through after the controller was told
// to stop (a create cancelled half-way could be made by the server after
// a successor listed).
const writeTimeout = 30 * time.Second

// Options configure a Controller.
type Options struct {
	// Client watches StatefulSets, pods, ControllerRevisions and
	// PersistentVolumeClaims and writes them. Required.
	Client kubernetes.Interface
	// Informers shares caches with the other controllers of the process;
	// nil means caches of the controller's own.
	Informers *informer.Factory
	// Workers sync sets in parallel; 0 means 5 (upstream's
	// --concurrent-statefulset-syncs).
	Workers int
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Controller is the StatefulSet controller. Run drives it.
type Controller struct {
	client    kubernetes.Interface
	now       func() time.Time
	loop      *controller.Loop[string]
	queue     *workqueue.Queue[string]
	expect    *controller.Expectations
	recorder  *events.Recorder
	sets      *informer.Informer[*appsv1.StatefulSet]
	pods      *informer.Informer[*corev1.Pod]
	revisions *informer.Informer[*appsv1.ControllerRevision]
	claims    *informer.Informer[*corev1.PersistentVolumeClaim]

	// written is, per set, its last status write: the set as the
	// server returned it, and the resourceVersion the cache held then.
	// While the cache still holds that version, the write is newer than
	// the cache, and the next status write starts from it, rather than
	// from the cache and into a certain conflict.
	mu      sync.Mutex
	written map[string]statusWrite
}

type statusWrite struct {
	base string
	set  *appsv1.StatefulSet
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("statefulset controller: Client is required")
	}
	if opts.Workers <= 0 {
		opts.Workers = 5
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Controller{client: opts.Client, now: opts.Now,
		queue: workqueue.New[string](workqueue.Options{}), expect: controller.NewExpectations(opts.Now), written: map[string]statusWrite{},
		recorder: events.New(events.Options{Client: opts.Client, Component: "statefulset-controller"})}
	var err error
	c.sets, err = informer.For(opts.Informers, informer.Options[*appsv1.StatefulSet]{
		Name: "statefulsets", Shape: informer.Shape{Resource: "statefulsets.apps"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.AppsV1().StatefulSets(""), nil),
		Indexers:      map[string]listwatch.IndexFunc[*appsv1.StatefulSet]{namespaceIndex: informer.ByNamespace[*appsv1.StatefulSet]},
		Handlers: informer.Handlers[*appsv1.StatefulSet]{
			OnAdd:    func(s *appsv1.StatefulSet) { c.queue.Add(key(s)) },
			OnUpdate: func(_, s *appsv1.StatefulSet) { c.queue.Add(key(s)) },
			OnDelete: func(s *appsv1.StatefulSet) { c.expect.Forget(key(s)); c.forgetWritten(key(s)); c.queue.Add(key(s)) },
		},
	})
	if err != nil {
		return nil, err
	}
	c.pods, err = informer.For(opts.Informers, informer.Options[*corev1.Pod]{
		Name: "pods", Shape: informer.Shape{Resource: "pods"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Pods(""), nil),
		Indexers:      map[string]listwatch.IndexFunc[*corev1.Pod]{namespaceIndex: informer.ByNamespace[*corev1.Pod]},
		Handlers:      informer.Handlers[*corev1.Pod]{OnAdd: c.addPod, OnUpdate: c.updatePod, OnDelete: c.podDeleted},
	})
	if err != nil {
		return nil, err
	}
	c.revisions, err = informer.For(opts.Informers, informer.Options[*appsv1.ControllerRevision]{
		Name: "controllerrevisions", Shape: informer.Shape{Resource: "controllerrevisions.apps"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.AppsV1().ControllerRevisions(""), nil),
		Indexers:      map[string]listwatch.IndexFunc[*appsv1.ControllerRevision]{namespaceIndex: informer.ByNamespace[*appsv1.ControllerRevision]},
	})
	if err != nil {
		return nil, err
	}
	c.claims, err = informer.For(opts.Informers, informer.Options[*corev1.PersistentVolumeClaim]{
		Name: "persistentvolumeclaims", Shape: informer.Shape{Resource: "persistentvolumeclaims"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().PersistentVolumeClaims(""), nil),
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[string]{Name: "statefulset-controller", Queue: c.queue,
		Informers: []controller.Informer{c.sets, c.pods, c.revisions, c.claims},
		Recorder:  c.recorder, Workers: opts.Workers, Sync: c.sync}
	return c, nil
}

var key = controller.Key

// Run syncs StatefulSets until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once the caches are listed and no set is queued.
func (c *Controller) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

func (c *Controller) owner(namespace string, ref *metav1.OwnerReference) *appsv1.StatefulSet {
	s, _ := controller.Owner(c.sets.Store(), namespace, ref, kind)
	return s
}

// matching returns the sets that may adopt an orphan pod: their selector
// matches and the pod's name is one of theirs.
func (c *Controller) matching(p *corev1.Pod) []*appsv1.StatefulSet {
	sets, _ := c.sets.Store().ByIndex(namespaceIndex, p.Namespace)
	return slices.DeleteFunc(controller.Selecting(sets, func(s *appsv1.StatefulSet) *metav1.LabelSelector { return s.Spec.Selector }, p.Labels),
		func(s *appsv1.StatefulSet) bool { return Ordinal(s.Name, p.Name) < 0 })
}

func (c *Controller) addPod(p *corev1.Pod) {
	if ref := metav1.GetControllerOf(p); ref != nil {
		if s := c.owner(p.Namespace, ref); s != nil {
			c.expect.Created(key(s), p.Name)
			c.queue.Add(key(s))
		}
		return
	}
	for _, s := range c.matching(p) {
		c.queue.Add(key(s))
	}
}

func (c *Controller) updatePod(old, p *corev1.Pod) {
	oldRef, ref := metav1.GetControllerOf(old), metav1.GetControllerOf(p)
	if oldRef != nil && (ref == nil || oldRef.UID != ref.UID) {
		if s := c.owner(old.Namespace, oldRef); s != nil {
			c.queue.Add(key(s))
		}
	}
	if ref != nil {
		if s := c.owner(p.Namespace, ref); s != nil {
			if p.DeletionTimestamp != nil && old.DeletionTimestamp == nil {
				c.expect.Deleted(key(s), string(p.UID))
			}
			c.queue.Add(key(s))
		}
		return
	}
	for _, s := range c.matching(p) {
		c.queue.Add(key(s))
	}
}

func (c *Controller) podDeleted(p *corev1.Pod) {
	if s := c.owner(p.Namespace, metav1.GetControllerOf(p)); s != nil {
		c.expect.Deleted(key(s), string(p.UID))
		c.queue.Add(key(s))
	}
}

func (c *Controller) sync(ctx context.Context, k string) error {
	set, ok := c.sets.Store().Get(k)
	if !ok {
		c.expect.Forget(k)
		c.forgetWritten(k)
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil {
		return nil // validation refuses such selectors
	}
	all, _ := c.pods.Store().ByIndex(namespaceIndex, set.Namespace)
	members := slices.DeleteFunc(slices.Clone(all), func(p *corev1.Pod) bool { return Ordinal(set.Name, p.Name) < 0 })
	pods, err := c.claimer(set, sel).Claim(ctx, members)
	if err != nil {
		return err
	}
	current, update, collisions, err := c.revisionsOf(ctx, set)
	if err != nil {
		return err
	}
	plan := Decide(Input{Set: set, Pods: pods, CurrentRevision: current.Name, UpdateRevision: update.Name, Now: c.now()})
	plan.Status.CollisionCount = ptr.To(collisions)
	var actErr error
	if c.expect.Satisfied(k) {
		var created []*corev1.Pod
		created, actErr = c.act(ctx, set, plan.Actions, map[string]*appsv1.ControllerRevision{current.Name: current, update.Name: update})
		if len(created) > 0 {
			// The status counts them now: their watch events then find it
			// current, and the next pod's sync is not held behind a
			// second status write.
			plan.Status = Status(Input{Set: set, Pods: append(slices.Clone(pods), created...),
				CurrentRevision: current.Name, UpdateRevision: update.Name, Now: c.now()})
			plan.Status.CollisionCount = ptr.To(collisions)
		}
	}
	if err := c.writeStatus(ctx, set, plan.Status); err != nil {
		return err
	}
	if actErr != nil {
		return actErr
	}
	if err := c.truncateHistory(ctx, set, pods, current, update); err != nil {
		return err
	}
	if plan.Wait > 0 {
		c.queue.AddAfter(k, plan.Wait)
	}
	return nil
}

func (c *Controller) claimer(set *appsv1.StatefulSet, sel labels.Selector) *controller.Claimer[*corev1.Pod] {
	return &controller.Claimer[*corev1.Pod]{Owner: set, Kind: kind, Selector: sel, Client: c.client.CoreV1().Pods(set.Namespace),
		Fresh: func(ctx context.Context) (metav1.Object, error) {
			return c.client.AppsV1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
		}}
}

// act carries out the plan's actions, stopping at the first error.
// Expectations are set first, for every pod the plan makes or deletes.
// An OrderedReady set's plan is done in order, one write after the other;
// a Parallel set's step by step, the replicas' and the condemned pods'
// writes in upstream's slow-start batches (1, 2, 4, ... at once, as its
// runForAll with slowStartBatch), so a hundred pods take a few round
// trips rather than a hundred, and a failing create costs one failed
// batch rather than a hundred errors; the rolling update's deletes one
// after the other, as upstream's. It returns the pods it
// created, as the server returned them.
func (c *Controller) act(ctx context.Context, set *appsv1.StatefulSet, actions []Action, revs map[string]*appsv1.ControllerRevision) ([]*corev1.Pod, error) {
	if len(actions) == 0 {
		return nil, nil
	}
	k := key(set)
	var named, dels []string
	for _, a := range actions {
		if a.Type == Create {
			named = append(named, PodName(set, a.Ordinal))
		} else {
			dels = append(dels, string(a.Pod.UID))
		}
	}
	c.expect.Expect(k, 0, named, dels)
	// Writes once sent are seen through even if the controller stops.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	done := make([]bool, len(actions))
	made := make([]*corev1.Pod, len(actions))
	do := func(i int) error {
		a := actions[i]
		var err error
		if ctx.Err() != nil {
			err = ctx.Err()
		} else if a.Type == Create {
			made[i], err = c.createPod(wctx, set, a, revs[a.Revision])
		} else {
			err = c.deletePod(wctx, set, a)
		}
		done[i] = err == nil
		return err
	}
	var err error
	parallel := set.Spec.PodManagementPolicy == appsv1.ParallelPodManagement
	for i := 0; i < len(actions) && err == nil; {
		// One step at a time: the replicas, then the condemned pods (each
		// step of a Parallel set in batches), then the rolling update.
		end := i + 1
		for end < len(actions) && actions[end].Step == actions[i].Step {
			end++
		}
		if parallel && actions[i].Step != UpdateStep {
			next := atomic.Int64{}
			next.Store(int64(i))
			_, err = controller.SlowStart(end-i, func() error { return do(int(next.Add(1) - 1)) })
		} else {
			for j := i; j < end && err == nil; j++ {
				err = do(j)
			}
		}
		i = end
	}
	if err != nil {
		// What was not done will never be seen.
		for i, a := range actions {
			switch {
			case done[i]:
			case a.Type == Create:
				c.expect.Created(k, PodName(set, a.Ordinal))
			default:
				c.expect.Deleted(k, string(a.Pod.UID))
			}
		}
	}
	var created []*corev1.Pod
	for _, p := range made {
		if p != nil {
			created = append(created, p)
		}
	}
	return created, err
}

// NewPod is upstream's newVersionedStatefulSetPod for one revision of the
// set: the template's labels, annotations and finalizers, the set as
// controller, name and hostname <set>-<ordinal>, subdomain the service,
// the pod-name, pod-index and controller-revision-hash labels, and each
// claim template as a persistentVolumeClaim volume of its own claim.
func NewPod(set *appsv1.StatefulSet, ordinal int, revision string) *corev1.Pod {
	t := set.Spec.Template.DeepCopy()
	name := PodName(set, ordinal)
	lbls := make(map[string]string, len(t.Labels)+3)
	for k, v := range t.Labels {
		lbls[k] = v
	}
	lbls[appsv1.StatefulSetPodNameLabel] = name
	lbls[appsv1.PodIndexLabel] = fmt.Sprint(ordinal)
	lbls[appsv1.ControllerRevisionHashLabelKey] = revision
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: set.Namespace, Labels: lbls, Annotations: t.Annotations,
			Finalizers: t.Finalizers, OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, kind)}},
		Spec: t.Spec,
	}
	p.Spec.Hostname, p.Spec.Subdomain = name, set.Spec.ServiceName
	var vols []corev1.Volume
	claims := map[string]bool{}
	for _, ct := range set.Spec.VolumeClaimTemplates {
		claims[ct.Name] = true
		vols = append(vols, corev1.Volume{Name: ct.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: ClaimName(set, ct.Name, ordinal)}}})
	}
	for _, v := range p.Spec.Volumes {
		if !claims[v.Name] {
			vols = append(vols, v)
		}
	}
	p.Spec.Volumes = vols
	return p
}

// NewClaim is upstream's getPersistentVolumeClaims for one template and
// ordinal: the template named <template>-<set>-<ordinal>, with the
// selector's labels, and owned by the set when whenDeleted is Delete
// (the garbage collector then deletes it with the set).
func NewClaim(set *appsv1.StatefulSet, ct *corev1.PersistentVolumeClaim, ordinal int) *corev1.PersistentVolumeClaim {
	claim := ct.DeepCopy()
	claim.Name, claim.Namespace = ClaimName(set, ct.Name, ordinal), set.Namespace
	claim.Status = corev1.PersistentVolumeClaimStatus{}
	if claim.Labels == nil {
		claim.Labels = map[string]string{}
	}
	for k, v := range set.Spec.Selector.MatchLabels {
		claim.Labels[k] = v
	}
	if p := set.Spec.PersistentVolumeClaimRetentionPolicy; p != nil && p.WhenDeleted == appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
		claim.OwnerReferences = append(claim.OwnerReferences, metav1.OwnerReference{APIVersion: kind.GroupVersion().String(),
			Kind: kind.Kind, Name: set.Name, UID: set.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)})
	}
	return claim
}

// createPod makes the action's claims and pod; it returns the pod the
// server made (nil when it made none).
func (c *Controller) createPod(ctx context.Context, set *appsv1.StatefulSet, a Action, rev *appsv1.ControllerRevision) (*corev1.Pod, error) {
	at := set
	if rev != nil {
		var err error
		if at, err = ApplyRevision(set, rev); err != nil {
			return nil, err
		}
	}
	// Claims first: the pod must never start without its storage.
	for i := range set.Spec.VolumeClaimTemplates {
		claim := NewClaim(set, &set.Spec.VolumeClaimTemplates[i], a.Ordinal)
		if _, ok := c.claims.Store().Get(set.Namespace + "/" + claim.Name); ok {
			continue
		}
		_, err := c.client.CoreV1().PersistentVolumeClaims(set.Namespace).Create(ctx, claim, metav1.CreateOptions{})
		switch {
		case err == nil:
			c.recorder.Event(set, "StatefulSet", corev1.EventTypeNormal, "SuccessfulCreate",
				fmt.Sprintf("create Claim %s Pod %s in StatefulSet %s success", claim.Name, PodName(set, a.Ordinal), set.Name))
		case apierrors.IsAlreadyExists(err):
		default:
			c.recorder.Event(set, "StatefulSet", corev1.EventTypeWarning, "FailedCreate",
				fmt.Sprintf("create Claim %s for Pod %s in StatefulSet %s failed error: %v", claim.Name, PodName(set, a.Ordinal), set.Name, err))
			return nil, fmt.Errorf("claim %s/%s: %w", set.Namespace, claim.Name, err)
		}
	}
	pod := NewPod(at, a.Ordinal, a.Revision)
	pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(set, kind)}
	made, err := c.client.CoreV1().Pods(set.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	switch {
	case err == nil:
		c.recorder.Event(set, "StatefulSet", corev1.EventTypeNormal, "SuccessfulCreate",
			fmt.Sprintf("create Pod %s in StatefulSet %s successful", pod.Name, set.Name))
		return made, nil
	case apierrors.IsAlreadyExists(err):
		c.expect.Created(key(set), pod.Name) // its event came before, or will find nothing expected
		return nil, nil
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, nil
	}
	c.recorder.Event(set, "StatefulSet", corev1.EventTypeWarning, "FailedCreate",
		fmt.Sprintf("create Pod %s in StatefulSet %s failed error: %v", pod.Name, set.Name, err))
	return nil, fmt.Errorf("pod %s/%s: %w", set.Namespace, pod.Name, err)
}

func (c *Controller) deletePod(ctx context.Context, set *appsv1.StatefulSet, a Action) error {
	p := a.Pod
	if a.Condemned {
		if err := c.retainOrRelease(ctx, set, p, a.Ordinal); err != nil {
			return err
		}
	}
	err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
	switch {
	case err == nil:
		c.recorder.Event(set, "StatefulSet", corev1.EventTypeNormal, "SuccessfulDelete",
			fmt.Sprintf("delete Pod %s in StatefulSet %s successful", p.Name, set.Name))
		return nil
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		c.expect.Deleted(key(set), string(p.UID))
		return nil
	}
	c.expect.Deleted(key(set), string(p.UID))
	c.recorder.Event(set, "StatefulSet", corev1.EventTypeWarning, "FailedDelete",
		fmt.Sprintf("delete Pod %s in StatefulSet %s failed error: %v", p.Name, set.Name, err))
	return fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
}

// retainOrRelease applies whenScaled to the claims of a pod a scale down
// deletes: Delete makes the pod their owner, so the garbage collector
// deletes them after it; Retain leaves them for the next pod of that
// ordinal.
func (c *Controller) retainOrRelease(ctx context.Context, set *appsv1.StatefulSet, p *corev1.Pod, ordinal int) error {
	pol := set.Spec.PersistentVolumeClaimRetentionPolicy
	if pol == nil || pol.WhenScaled != appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
		return nil
	}
	for _, ct := range set.Spec.VolumeClaimTemplates {
		claim, ok := c.claims.Store().Get(set.Namespace + "/" + ClaimName(set, ct.Name, ordinal))
		if !ok || slices.ContainsFunc(claim.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == p.UID }) {
			continue
		}
		cp := claim.DeepCopy()
		cp.OwnerReferences = append(cp.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID})
		if _, err := c.client.CoreV1().PersistentVolumeClaims(set.Namespace).Update(ctx, cp, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("claim %s/%s: %w", cp.Namespace, cp.Name, err)
		}
	}
	return nil
}

// revisionsOf is upstream's getStatefulSetRevisions: the update
// revision (SyncRevision) and the current one (the one status names, else
// the update revision).
func (c *Controller) revisionsOf(ctx context.Context, set *appsv1.StatefulSet) (current, update *appsv1.ControllerRevision, collisions int32, err error) {
	revs := c.owned(set)
	update, collisions, err = controller.SyncRevision(ctx, c.client.AppsV1().ControllerRevisions(set.Namespace), set.UID, revs,
		ptr.Deref(set.Status.CollisionCount, 0), func(revision int64, collisions *int32) (*appsv1.ControllerRevision, error) {
			return NewRevision(set, revision, collisions)
		})
	if err != nil {
		return nil, nil, 0, err
	}
	current = update
	for _, r := range revs {
		if r.Name == set.Status.CurrentRevision {
			current = r
		}
	}
	return current, update, collisions, nil
}

// owned are the ControllerRevisions the set controls, oldest first.
func (c *Controller) owned(set *appsv1.StatefulSet) []*appsv1.ControllerRevision {
	all, _ := c.revisions.Store().ByIndex(namespaceIndex, set.Namespace)
	return controller.OwnedRevisions(all, set.UID)
}

// truncateHistory keeps the revisions live pods use, the current and
// update ones, and revisionHistoryLimit more.
func (c *Controller) truncateHistory(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, current, update *appsv1.ControllerRevision) error {
	live := map[string]bool{current.Name: true, update.Name: true}
	for _, p := range pods {
		live[revisionOf(p)] = true
	}
	return controller.TruncateHistory(ctx, c.client.AppsV1().ControllerRevisions(set.Namespace), c.owned(set), live, int(ptr.Deref(set.Spec.RevisionHistoryLimit, 10)))
}

func (c *Controller) writeStatus(ctx context.Context, set *appsv1.StatefulSet, s appsv1.StatefulSetStatus) error {
	k := key(set)
	base := set.ResourceVersion
	c.mu.Lock()
	if w, ok := c.written[k]; ok && w.base == base && w.set.UID == set.UID {
		set = w.set
	}
	c.mu.Unlock()
	s.Conditions = set.Status.Conditions
	if apiequality.Semantic.DeepEqual(set.Status, s) {
		return nil
	}
	cp := set.DeepCopy()
	cp.Status = s
	out, err := c.client.AppsV1().StatefulSets(set.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // the newer object is queued by its own event
	}
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.written[k] = statusWrite{base: base, set: out}
	c.mu.Unlock()
	return nil
}

func (c *Controller) forgetWritten(k string) {
	c.mu.Lock()
	delete(c.written, k)
	c.mu.Unlock()
}
