package admission_test

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestWebhookServiceWithoutReadyEndpoints: a webhook behind a Service
// with no ready endpoint fails as upstream's endpoint resolver fails it,
// "no endpoints available for service", wrapped as a failure to call the
// webhook (500, failing closed); it is never sent to the Service's
// clusterIP, where, with no proxy beside the API server, it would follow
// the host's default route. (EndpointSlices refuse loopback addresses, so
// calls to a ready endpoint are left to the conformance suite's webhook
// pods.)
func TestWebhookServiceWithoutReadyEndpoints(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(shared.RESTConfig())
	ns := webhookNamespace(t, client)
	if _, err := client.CoreV1().Services(ns).Create(t.Context(), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "hook"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "hook"}, Ports: []corev1.ServicePort{{
			Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443)}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: ns + "-svc"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{{
		Name:                    "svc.hook.example.com",
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: ns, Name: "hook", Path: ptr.To("/svc")}},
		Rules:                   configMapRule(admissionregistrationv1.Create),
		FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
		NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"adm-webhook": ns}},
	}}}
	if _, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(t.Context(), c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), c.Name, metav1.DeleteOptions{})
	})

	want := `Internal error occurred: failed calling webhook "svc.hook.example.com": failed to call webhook: Post "https://hook.` + ns + `.svc:443/svc?timeout=10s": no endpoints available for service "hook"`
	// create tries a ConfigMap until the webhook fails it; the
	// configuration reaches the server's cache a moment after its create,
	// and so does the Service (until then the call fails with
	// `services "hook" not found`, as upstream's informer-fed resolver).
	create := func(name string) error {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err := client.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			settled := err != nil && strings.Contains(err.Error(), "webhook") && !strings.Contains(err.Error(), `services "hook" not found`)
			if settled || time.Now().After(deadline) {
				return err
			}
			_ = client.CoreV1().ConfigMaps(ns).Delete(t.Context(), name, metav1.DeleteOptions{})
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := create("no-slice"); err == nil || err.Error() != want {
		t.Fatalf("create with no EndpointSlice: %v\nwant %s", err, want)
	}

	// An endpoint that is not ready (TEST-NET-1, never dialled): still none.
	if _, err := client.DiscoveryV1().EndpointSlices(ns).Create(t.Context(), &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "hook-1", Labels: map[string]string{discoveryv1.LabelServiceName: "hook"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(8443))}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := create("unready"); err == nil || err.Error() != want {
		t.Fatalf("create with an unready endpoint: %v\nwant %s", err, want)
	}
	if _, err := client.CoreV1().ConfigMaps(ns).Get(t.Context(), "unready", metav1.GetOptions{}); err == nil {
		t.Error("the ConfigMap the webhook failed was stored")
	}
}
