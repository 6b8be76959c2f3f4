package disruption_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// BenchmarkPDBCheckedEviction measures evictions of ready pods under a
// budget that allows them all, one after another through client-go:
// each reads the pod, lists the namespace's budgets, takes a disruption
// in the budget's status, marks the pod DisruptionTarget and deletes it.
// Reported as evictions/s (absolute: no upstream runs here). b.N stays
// under 2000, the disruptedPods a budget takes before the controller
// confirms them.
func BenchmarkPDBCheckedEviction(b *testing.B) {
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ctx := context.Background()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "pdb-bench-"}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
	names := make([]string, b.N)
	for i := range b.N {
		p, err := cs.CoreV1().Pods(ns.Name).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d", i), Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if _, err := cs.CoreV1().Pods(ns.Name).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		names[i] = p.Name
	}
	pdb, err := cs.PolicyV1().PodDisruptionBudgets(ns.Name).Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(0)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: int32(b.N), CurrentHealthy: int32(b.N), ExpectedPods: int32(b.N)}
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns.Name).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for _, name := range names {
		if err := evict(cs, ns.Name, name, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "evictions/s")
}
