package kite

import (
	"context"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/controllers/crd"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/listwatch"
	"github.com/kite-project/kite/registry"
)

// crdFollower serves what the CRD objects say, as upstream's CRD handler
// follows its CRD informer: a CRD's resource is served from the moment it
// is Established (anew when its spec or accepted names change), refuses
// creates once the CRD is Terminating, and is no longer served once its
// instances are gone (InstanceDeletionCompleted, written by the CRD
// controller, which removes the finalizer only then) or the CRD is. It
// watches the CRDs' Store in process: serving is the API server's own
// job, and follows the watch cache without a round trip.
type crdFollower = informer.Informer[*apiextensionsv1.CustomResourceDefinition]

func newCRDFollower(ctx context.Context, crds *registry.Store, installer *crdInstaller) (*crdFollower, error) {
	follow := func(c *apiextensionsv1.CustomResourceDefinition) {
		switch {
		case crd.InstancesDeleted(c):
			installer.Uninstall(c.Name)
		case apihelpers.IsCRDConditionTrue(c, apiextensionsv1.Established):
			if err := installer.Install(ctx, c); err != nil {
				klog.ErrorS(err, "Custom resources of an Established CRD not served", "crd", c.Name)
				return
			}
			if apihelpers.IsCRDConditionTrue(c, apiextensionsv1.Terminating) {
				if err := installer.Terminate(c.Name); err != nil {
					klog.ErrorS(err, "Terminating CRD still served for creates", "crd", c.Name)
				}
			}
		}
	}
	return informer.New(informer.Options[*apiextensionsv1.CustomResourceDefinition]{
		Name:          "customresourcedefinitions (serving)",
		ListerWatcher: storeListerWatcher(crds),
		Handlers: informer.Handlers[*apiextensionsv1.CustomResourceDefinition]{
			OnAdd:    follow,
			OnUpdate: func(_, c *apiextensionsv1.CustomResourceDefinition) { follow(c) },
			OnDelete: func(c *apiextensionsv1.CustomResourceDefinition) { installer.Uninstall(c.Name) },
		},
	})
}

// storeListerWatcher lists and watches a registry Store in process, all
// namespaces, as a client would see it.
func storeListerWatcher(s *registry.Store) listwatch.ListerWatcher {
	internal := func(opts metav1.ListOptions) (*metainternalversion.ListOptions, error) {
		out := &metainternalversion.ListOptions{}
		err := metainternalversion.Convert_v1_ListOptions_To_internalversion_ListOptions(&opts, out, nil)
		return out, err
	}
	return listwatch.ListWatchFuncs{
		ListFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			in, err := internal(opts)
			if err != nil {
				return nil, err
			}
			return s.List(ctx, "", in)
		},
		WatchFunc: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			in, err := internal(opts)
			if err != nil {
				return nil, err
			}
			w, err := s.Watch(ctx, "", in)
			if err != nil {
				return nil, err
			}
			// The watch cache's events carry objects wrapped with their
			// encodings; the reflector wants the objects.
			return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
				if c, ok := ev.Object.(runtime.CacheableObject); ok {
					ev.Object = c.GetObject()
				}
				return ev, true
			}), nil
		},
	}
}
