package garbagecollector_test

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/kite-project/kite/controllers/garbagecollector"
)

// TestDeletedCRDIsNoLongerWatched: a CRD's resource is watched once
// discovery lists it; its custom resources own and are owned; once the
// CRD is deleted (its instances first, by the CRD finalizer, which lets
// the collector delete their dependents), the collector stops watching
// the resource within one discovery resync, its watch goroutines end, and
// it keeps collecting for the other resources.
func TestDeletedCRDIsNoLongerWatched(t *testing.T) {
	const period = 300 * time.Millisecond
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	gc, err := garbagecollector.New(garbagecollector.Options{
		Metadata: metadata.NewForConfigOrDie(srv.RESTConfig()), Discovery: cs.Discovery(), DiscoveryPeriod: period})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { gc.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	if err := gc.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	watchGoroutines := reflectorGoroutines()

	const group = "gcwatch.example.com"
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gizmos"}
	crds := apiextensions.NewForConfigOrDie(srv.RESTConfig()).ApiextensionsV1().CustomResourceDefinitions()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gizmos." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gizmos", Singular: "gizmo", Kind: "Gizmo"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: new(true)}}}},
		},
	}
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = crds.Delete(context.Background(), crd.Name, metav1.DeleteOptions{}) })
	eventually(t, "the CRD's resource watched", func(context.Context) (bool, error) {
		return slices.Contains(gc.Watching(), gvr), nil
	})
	if err := gc.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if n := reflectorGoroutines(); n <= watchGoroutines {
		t.Fatalf("watch goroutines %d while watching the CRD's resource, %d before: not counted right", n, watchGoroutines)
	}

	ns := namespace(t, cs)
	gizmos := dynamic.NewForConfigOrDie(srv.RESTConfig()).Resource(gvr).Namespace(ns)
	newGizmo := func(name string, owners ...metav1.OwnerReference) *unstructured.Unstructured {
		t.Helper()
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Gizmo"}}
		u.SetName(name)
		u.SetOwnerReferences(owners)
		var out *unstructured.Unstructured
		eventually(t, "gizmo "+name+" created", func(ctx context.Context) (bool, error) {
			var err error
			out, err = gizmos.Create(ctx, u, metav1.CreateOptions{})
			return err == nil, nil
		})
		return out
	}
	owner := newGizmo("owner")
	configMap(t, cs, ns, "of-a-gizmo", metav1.OwnerReference{APIVersion: group + "/v1", Kind: "Gizmo", Name: "owner", UID: owner.GetUID()})
	cmOwner := configMap(t, cs, ns, "owns-a-gizmo")
	newGizmo("dependent", ownedBy("ConfigMap", cmOwner.Name, cmOwner.UID, false))
	if err := gc.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "of-a-gizmo", metav1.GetOptions{}); err != nil {
		t.Fatalf("dependent of a live custom resource: %v", err)
	}

	if err := crds.Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "dependent of a custom resource the CRD's deletion removed collected", cmGone(cs, ns, "of-a-gizmo"))
	eventually(t, "the CRD gone", func(ctx context.Context) (bool, error) {
		_, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	gone := time.Now()
	eventually(t, "the CRD's resource no longer watched", func(context.Context) (bool, error) {
		return !slices.Contains(gc.Watching(), gvr), nil
	})
	// One resync, plus the time a discovery read and the stop take.
	if took := time.Since(gone); took > period+2*time.Second {
		t.Errorf("stopped watching %v after the CRD went, more than one resync (%v)", took, period)
	}
	eventually(t, "the resource's watch goroutines gone", func(context.Context) (bool, error) {
		return reflectorGoroutines() == watchGoroutines, nil
	})

	// Still collecting, for built-in resources.
	other := configMap(t, cs, ns, "later-owner")
	configMap(t, cs, ns, "later-dependent", ownedBy("ConfigMap", other.Name, other.UID, false))
	if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, other.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "dependent collected after the CRD went", cmGone(cs, ns, "later-dependent"))
	if err := gc.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if n := reflectorGoroutines(); n != watchGoroutines {
		t.Errorf("watch goroutines %d, %d before the CRD", n, watchGoroutines)
	}
}

// reflectorGoroutines counts the goroutines running a listwatch
// Reflector: each watched resource's, and the other controllers' of the
// shared server, whose number does not change during the test.
func reflectorGoroutines() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "kite/listwatch.(*Reflector") {
			n++
		}
	}
	return n
}
