package crdserving

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/controllers/crd"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/registry"
	"github.com/kite-project/kite/resourceset"
)

// follower serves what the CRD objects say, as upstream's CRD handler
// follows its CRD informer: a CRD's resource is served from the moment it
// is Established (anew when its spec or accepted names change), refuses
// creates once the CRD is Terminating, and is no longer served once its
// instances are gone (InstanceDeletionCompleted, written by the CRD
// controller, which removes the finalizer only then) or the CRD is. It
// watches the CRDs' Store in process: serving is the API server's own
// job, and follows the watch cache without a round trip.
//
// The informer's handlers only note which CRDs changed; one goroutine
// applies the changes, all that piled up while it worked at once, so
// that CRDs established together (an operator's manifests,
// kite.Options.CRDs) rebuild routes, discovery and OpenAPI once, not once
// each.
type follower struct {
	informer  *informer.Informer[*apiextensionsv1.CustomResourceDefinition]
	installer *installer

	// mu guards changed: the latest object of each CRD that changed
	// since the last pass, nil for one deleted.
	mu      sync.Mutex
	changed map[string]*apiextensionsv1.CustomResourceDefinition
	wake    chan struct{} // one token: changed is not empty
}

func newFollower(crds *registry.Store, installer *installer) (*follower, error) {
	f := &follower{installer: installer, changed: map[string]*apiextensionsv1.CustomResourceDefinition{}, wake: make(chan struct{}, 1)}
	var err error
	f.informer, err = informer.New(informer.Options[*apiextensionsv1.CustomResourceDefinition]{
		Name:          "customresourcedefinitions (serving)",
		ListerWatcher: resourceset.StoreListerWatcher(crds),
		Handlers: informer.Handlers[*apiextensionsv1.CustomResourceDefinition]{
			OnAdd:    func(c *apiextensionsv1.CustomResourceDefinition) { f.note(c.Name, c) },
			OnUpdate: func(_, c *apiextensionsv1.CustomResourceDefinition) { f.note(c.Name, c) },
			OnDelete: func(c *apiextensionsv1.CustomResourceDefinition) { f.note(c.Name, nil) },
		},
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (f *follower) note(name string, crd *apiextensionsv1.CustomResourceDefinition) {
	f.mu.Lock()
	f.changed[name] = crd
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// retryFailed is how soon a CRD whose resource could not be served is
// tried again.
const retryFailed = time.Second

// Run follows the CRDs until ctx ends.
func (f *follower) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { f.informer.Run(ctx) })
	retry := time.NewTimer(retryFailed)
	retry.Stop()
	defer retry.Stop()
	var failed []string
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
		case <-retry.C:
			for _, name := range failed {
				crd, _ := f.informer.Store().Get(name)
				f.note(name, crd) // nil when gone meanwhile
			}
			continue
		}
		f.mu.Lock()
		changed := f.changed
		f.changed = map[string]*apiextensionsv1.CustomResourceDefinition{}
		f.mu.Unlock()
		if failed = f.apply(ctx, changed); len(failed) > 0 {
			retry.Reset(retryFailed)
		}
	}
}

// apply serves what the changed CRDs say and returns those it could not
// serve.
func (f *follower) apply(ctx context.Context, changed map[string]*apiextensionsv1.CustomResourceDefinition) (failed []string) {
	var install, terminate []*apiextensionsv1.CustomResourceDefinition
	for _, name := range slices.Sorted(maps.Keys(changed)) {
		switch c := changed[name]; {
		case c == nil, crd.InstancesDeleted(c):
			f.installer.Uninstall(name)
		case apihelpers.IsCRDConditionTrue(c, apiextensionsv1.Established):
			install = append(install, c)
			if apihelpers.IsCRDConditionTrue(c, apiextensionsv1.Terminating) {
				terminate = append(terminate, c)
			}
		}
	}
	if err := f.installer.Install(ctx, install...); err != nil {
		klog.ErrorS(err, "Custom resources of Established CRDs not served, retrying", "in", retryFailed)
		for _, c := range install {
			if !f.installer.installed(c) {
				failed = append(failed, c.Name)
			}
		}
	}
	for _, c := range terminate {
		if err := f.installer.Terminate(c.Name); err != nil {
			klog.ErrorS(err, "Terminating CRD still served for creates", "crd", c.Name)
			failed = append(failed, c.Name)
		}
	}
	return failed
}
