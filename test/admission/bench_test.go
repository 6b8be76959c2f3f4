package admission_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// BenchmarkCreateThroughValidatingWebhook measures what one validating
// webhook adds to a create, beyond the webhook's own handling time: it
// creates configMaps alternately in a namespace the webhook sees and in
// one it does not, and reports the p50 of each and the p50 overhead
// (with webhook − the webhook's handling − without). The connection to
// the webhook is kept alive between calls.
func BenchmarkCreateThroughValidatingWebhook(b *testing.B) {
	client := kubernetes.NewForConfigOrDie(config(b))
	ns := webhookNamespace(b, client)
	plain := webhookNamespace(b, client)
	h := newHookServer(b, func(string, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse { return allow() })
	installValidating(b, client, ns, h, validatingHook("bench.adm.example.com", h, "/bench", ns))
	var with, without, overhead []time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		if _, err := client.CoreV1().ConfigMaps(ns).Create(b.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("b%d", i)}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		with = append(with, d)
		overhead = append(overhead, d-time.Duration(h.handling.Load()))
		start = time.Now()
		if _, err := client.CoreV1().ConfigMaps(plain).Create(b.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("b%d", i)}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		without = append(without, time.Since(start))
	}
	p50 := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
	pw, pwo, po := p50(with), p50(without), p50(overhead)
	b.ReportMetric(float64(pw.Microseconds()), "p50-with-µs")
	b.ReportMetric(float64(pwo.Microseconds()), "p50-without-µs")
	b.ReportMetric(float64((po - pwo).Microseconds()), "p50-webhook-overhead-µs")
}
