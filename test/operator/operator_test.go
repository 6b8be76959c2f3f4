// Package operator_test runs an operator the way its authors test it: a
// controller-runtime manager with a reconciler over a custom resource,
// against an embedded Kite started with the operator's CRDs.
package operator_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/go-logr/logr"

	"github.com/kite-project/kite"
)

func TestMain(m *testing.M) {
	// controller-runtime wants a logger before it logs anything.
	log.SetLogger(logr.Discard())
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		// controller-runtime's global log sink waits for a logger forever.
		goleak.IgnoreAnyFunction("sigs.k8s.io/controller-runtime/pkg/log.eventuallyFulfillRoot"),
	)
}

var widgetGVK = schema.GroupVersionKind{Group: "operator.example.com", Version: "v1", Kind: "Widget"}

func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.operator.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "operator.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec":   {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer"}}},
						"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"observedSize": {Type: "integer"}}},
					},
				}},
			}},
		},
	}
}

// reconciler copies spec.size to status.observedSize.
type reconciler struct{ client client.Client }

func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(widgetGVK)
	if err := r.client.Get(ctx, req.NamespacedName, w); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size")
	if observed, found, _ := unstructured.NestedInt64(w.Object, "status", "observedSize"); found && observed == size {
		return ctrl.Result{}, nil
	}
	if err := unstructured.SetNestedField(w.Object, size, "status", "observedSize"); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.client.Status().Update(ctx, w)
}

// TestControllerRuntimeManager starts Kite with the operator's CRD, runs
// a manager whose reconciler writes status from spec, and checks that a
// created widget, then its change, are reconciled.
func TestControllerRuntimeManager(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	srv, err := kite.Start(ctx, kite.Options{EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal", CRDs: []*apiextensionsv1.CustomResourceDefinition{widgetCRD()}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	mgr, err := ctrl.NewManager(srv.RESTConfig(), ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	watched := &unstructured.Unstructured{}
	watched.SetGroupVersionKind(widgetGVK)
	if err := ctrl.NewControllerManagedBy(mgr).For(watched).Complete(&reconciler{client: mgr.GetClient()}); err != nil {
		t.Fatal(err)
	}
	mgrCtx, stopMgr := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	defer func() {
		stopMgr()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()

	c, err := client.New(srv.RESTConfig(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": int64(3)}}}
	w.SetGroupVersionKind(widgetGVK)
	w.SetNamespace("default")
	w.SetName("w")
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	observed := func(want int64) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(widgetGVK)
			if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "w"}, got); err != nil {
				return false, nil
			}
			size, _, _ := unstructured.NestedInt64(got.Object, "status", "observedSize")
			return size == want, nil
		}); err != nil {
			t.Fatalf("status.observedSize never became %d", want)
		}
	}
	observed(3)
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"size":5}}`))
	if err := c.Patch(ctx, w, patch); err != nil {
		t.Fatal(err)
	}
	observed(5)
}
