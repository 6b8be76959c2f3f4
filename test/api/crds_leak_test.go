package api_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite"
)

// TestCRDCreateDeleteLeaksNothing creates a CRD with an instance and
// deletes it 100 times while a client watches configmaps: afterwards the
// served set, the installer and the goroutine count are back where they
// started, and the watch saw every configmap event.
func TestCRDCreateDeleteLeaksNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("100 CRD lifecycles")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	s, err := kite.Start(ctx, kite.Options{EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs := kubernetes.NewForConfigOrDie(s.RESTConfig())
	w, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	crds := s.Resources().Store("customresourcedefinitions.apiextensions.k8s.io")
	dyn := dynamic.NewForConfigOrDie(s.RESTConfig())
	stacksBefore := len(s.Resources().Stores())
	cycle := func(i int) {
		crd := leakCRD()
		if _, err := crds.Create(ctx, "", crd, &metav1.CreateOptions{}); err != nil {
			t.Fatalf("cycle %d: create CRD: %v", i, err)
		}
		cr := dyn.Resource(schema.GroupVersionResource{Group: "leak.example.com", Version: "v1", Resource: "things"}).Namespace("default")
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "leak.example.com/v1", "kind": "Thing", "metadata": map[string]any{"name": "t"}}}
		if err := wait.PollUntilContextTimeout(ctx, 2*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := cr.Create(ctx, obj, metav1.CreateOptions{})
			return err == nil, nil
		}); err != nil {
			t.Fatalf("cycle %d: custom resource never created", i)
		}
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := crds.Delete(ctx, "", crd.Name, &metav1.DeleteOptions{}); err != nil {
			t.Fatalf("cycle %d: delete CRD: %v", i, err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 2*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := crds.Get(ctx, "", crd.Name, &metav1.GetOptions{})
			return apierrors.IsNotFound(err) && s.CustomResources().Instances(crd.Name) == nil, nil
		}); err != nil {
			t.Fatalf("cycle %d: CRD not gone", i)
		}
	}
	cycle(0) // warm up: connections, pools
	runtime.GC()
	goroutinesBefore := runtime.NumGoroutine()
	const cycles = 100
	for i := 1; i <= cycles; i++ {
		cycle(i)
	}
	if n := len(s.Resources().Stores()); n != stacksBefore {
		t.Errorf("%d served resources after 100 CRD lifecycles, %d before", n, stacksBefore)
	}
	if n := len(s.CustomResources().Served()); n != 0 {
		t.Errorf("installer still serves %d CRDs", n)
	}
	var after int
	// A leak costs at least one goroutine per lifecycle (a watch cache, its
	// etcd watch stream, an informer), so 100 lifecycles leave at least 100
	// behind. The count is the process's: the package's shared server and
	// its controllers run beside this test's server, and their background
	// work (connections opened and closed, timers, etcd's gRPC streams)
	// moves it by a few either way at any moment (CI saw +10 once); half the cycle count is a margin a
	// correct server never crosses and a leaking one always does. Stopped
	// watch caches' goroutines end shortly after, and their etcd watch
	// streams close behind them: within seconds on a loaded machine.
	const slack = cycles / 2
	for range 500 {
		runtime.GC()
		if after = runtime.NumGoroutine(); after <= goroutinesBefore+slack {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if after > goroutinesBefore+slack {
		var stacks strings.Builder
		pprof.Lookup("goroutine").WriteTo(&stacks, 1)
		t.Errorf("goroutines: %d before, %d after 100 CRD lifecycles; now running:\n%s", goroutinesBefore, after, stacks.String())
	}
	for i := 0; i <= 100; i++ {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != "ADDED" {
				t.Fatalf("configmap watch: %s event %v", ev.Type, ev.Object)
			}
		case <-ctx.Done():
			t.Fatalf("configmap watch saw %d of 101 events", i)
		}
	}
}

func leakCRD() *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "things.leak.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "leak.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "things", Singular: "thing", Kind: "Thing", ListKind: "ThingList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}}}},
		},
	}
}
