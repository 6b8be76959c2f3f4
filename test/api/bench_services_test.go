package api_test

import (
	"context"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// BenchmarkServiceCreate creates Services one after the other in one
// namespace of the shared server, half ClusterIP and half NodePort: the
// cost of a create with its cluster IP (an IPAddress object) and node
// port allocated. Run with -benchtime=1000x for the 1 000 Services of
// docs/network.md.
func BenchmarkServiceCreate(b *testing.B) {
	client := kubernetes.NewForConfigOrDie(config(b))
	ctx := context.Background()
	ns, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-svc-"}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	svcs := client.CoreV1().Services(ns.Name)
	i := 0
	for b.Loop() {
		svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s" + strconv.Itoa(i)},
			Spec: v1.ServiceSpec{Selector: map[string]string{"app": "a"}, Ports: []v1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
		if i%2 == 1 {
			svc.Spec.Type = v1.ServiceTypeNodePort
		}
		if _, err := svcs.Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
