package operator_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kite-project/kite"
)

// widgetWebhooks are the operator's webhooks as kubebuilder scaffolds
// them: Service references whose paths the webhook server serves.
func widgetWebhooks() ([]*admissionregistrationv1.MutatingWebhookConfiguration, []*admissionregistrationv1.ValidatingWebhookConfiguration) {
	rules := []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{"operator.example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}}}}
	svc := func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "system", Name: "webhook-service", Path: ptr.To(path)}}
	}
	none := ptr.To(admissionregistrationv1.SideEffectClassNone)
	return []*admissionregistrationv1.MutatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "widget-defaulter"}, Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "mwidget.operator.example.com", ClientConfig: svc("/mutate-operator-example-com-v1-widget"), Rules: rules, SideEffects: none, AdmissionReviewVersions: []string{"v1"}}}}},
		[]*admissionregistrationv1.ValidatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "widget-validator"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "vwidget.operator.example.com", ClientConfig: svc("/validate-operator-example-com-v1-widget"), Rules: rules, SideEffects: none, AdmissionReviewVersions: []string{"v1"}}}}}
}

// TestControllerRuntimeWebhooks starts Kite with the operator's CRD and
// webhooks (kite.Options.Webhooks, as envtest's WebhookInstallOptions),
// runs a manager whose webhook server listens where Kite says with the
// certificate Kite wrote, and checks that the defaulting webhook fills
// spec.size and the validating one refuses a size above 10 with its
// message, on create and on update.
func TestControllerRuntimeWebhooks(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	mutating, validating := widgetWebhooks()
	srv, err := kite.Start(ctx, kite.Options{EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal", CRDs: []*apiextensionsv1.CustomResourceDefinition{widgetCRD()},
		Webhooks: kite.WebhookInstallOptions{MutatingWebhooks: mutating, ValidatingWebhooks: validating}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	wo := srv.WebhookInstallOptions()

	hooks := webhook.NewServer(webhook.Options{Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: wo.LocalServingCertDir})
	hooks.Register("/mutate-operator-example-com-v1-widget", &webhook.Admission{Handler: admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		w := &unstructured.Unstructured{}
		if err := json.Unmarshal(req.Object.Raw, &w.Object); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if _, found := specSize(w); !found {
			_ = unstructured.SetNestedField(w.Object, int64(1), "spec", "size")
		}
		out, _ := json.Marshal(w.Object)
		return admission.PatchResponseFromRaw(req.Object.Raw, out)
	})})
	hooks.Register("/validate-operator-example-com-v1-widget", &webhook.Admission{Handler: admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		w := &unstructured.Unstructured{}
		if err := json.Unmarshal(req.Object.Raw, &w.Object); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if size, _ := specSize(w); size > 10 {
			return admission.Denied("spec.size must be at most 10")
		}
		return admission.Allowed("")
	})})
	mgr, err := ctrl.NewManager(srv.RESTConfig(), ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}, WebhookServer: hooks})
	if err != nil {
		t.Fatal(err)
	}
	// As kubebuilder's main: the manager runs the server it hands out.
	_ = mgr.GetWebhookServer()
	mgrCtx, stopMgr := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	defer func() {
		stopMgr()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	// The server listens once the manager has started it.
	// A TLS handshake that trusts only the CA Kite generated checks the
	// certificate it wrote too.
	addr := net.JoinHostPort(wo.LocalServingHost, strconv.Itoa(wo.LocalServingPort))
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(wo.LocalServingCAData)
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots})
		if err == nil {
			conn.Close()
		}
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the webhook server never listened on %s", addr)
	}

	c, err := client.New(srv.RESTConfig(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	w.SetGroupVersionKind(widgetGVK)
	w.SetNamespace("default")
	w.SetName("hooked")
	if err := c.Create(ctx, w); err != nil {
		t.Fatalf("create: %v", err)
	}
	if size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size"); size != 1 {
		t.Errorf("created spec.size %d, want the defaulting webhook's 1", size)
	}
	big := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": int64(11)}}}
	big.SetGroupVersionKind(widgetGVK)
	big.SetNamespace("default")
	big.SetName("big")
	err = c.Create(ctx, big)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `admission webhook "vwidget.operator.example.com" denied the request: spec.size must be at most 10`) {
		t.Errorf("create of size 11: %v, want the validating webhook's denial", err)
	}
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"size":12}}`))
	if err := c.Patch(ctx, w, patch); !apierrors.IsForbidden(err) {
		t.Errorf("update to size 12: %v, want the validating webhook's denial", err)
	}
}

// specSize reads spec.size of a widget decoded from JSON (a float64).
func specSize(w *unstructured.Unstructured) (int64, bool) {
	v, found, _ := unstructured.NestedFieldNoCopy(w.Object, "spec", "size")
	switch n := v.(type) {
	case float64:
		return int64(n), found
	case int64:
		return n, found
	}
	return 0, found
}
