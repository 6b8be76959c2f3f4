package disruption_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// evict posts an Eviction as client-go's Evict does, but without its
// retries of a 429 with Retry-After (ten of them, 10 s apart for a
// budget not yet processed), so that the test sees the first answer.
func evict(cs kubernetes.Interface, ns, name string, opts *metav1.DeleteOptions) error {
	e := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, DeleteOptions: opts}
	return cs.PolicyV1().RESTClient().Post().AbsPath("/api/v1").Namespace(ns).Resource("pods").Name(name).SubResource("eviction").
		MaxRetries(0).Body(e).Do(context.Background()).Error()
}

// budgetCause returns the message of the error's DisruptionBudget cause.
func budgetCause(err error) string {
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Details == nil {
		return ""
	}
	for _, c := range se.ErrStatus.Details.Causes {
		if c.Type == policyv1.DisruptionBudgetCause {
			return c.Message
		}
	}
	return ""
}

func gone(t *testing.T, cs kubernetes.Interface, ns, name string) bool {
	t.Helper()
	p, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return p.DeletionTimestamp != nil
}

// An eviction takes one of the budget's allowed disruptions in the same
// write that checks it; once none is left, the next is refused with 429
// and upstream's message and DisruptionBudget cause, and the pod stays.
func TestEvictionHonoursTheBudget(t *testing.T) {
	cs, ns := start(t, true)
	createPod(t, cs, ns, "a", "web", true, nil)
	createPod(t, cs, ns, "b", "web", true, nil)
	createBudget(t, cs, ns, "web", "web", policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1))})
	waitStatus(t, cs, ns, "web", 2, 1, 2, 1)

	if err := evict(cs, ns, "a", nil); err != nil {
		t.Fatalf("first eviction: %v", err)
	}
	if !gone(t, cs, ns, "a") {
		t.Error("the evicted pod is still there")
	}
	err := evict(cs, ns, "b", nil)
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("second eviction: %v, want 429", err)
	}
	if got, want := err.Error(), "Cannot evict pod as it would violate the pod's disruption budget."; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	// The eviction itself left none allowed, whatever the controller has
	// seen yet: the budget needs 1 and has 1 once the controller counts;
	// before it has, the status still counts 2 healthy against 1 desired,
	// and upstream's message for a budget at zero with more healthy than
	// desired and no sync failure is the plain one.
	switch c := budgetCause(err); c {
	case "The disruption budget web needs 1 healthy pods and has 1 currently",
		"The disruption budget web does not allow evicting pods currently":
	default:
		t.Errorf("cause %q", c)
	}
	if gone(t, cs, ns, "b") {
		t.Error("the refused eviction deleted the pod")
	}
	waitStatus(t, cs, ns, "web", 1, 1, 1, 0)
}

// The eviction records the pod in disruptedPods (the controller does not
// count it while it goes) and marks it with the DisruptionTarget
// condition before deleting it; a pod bound to a node gets its grace
// period from the eviction's DeleteOptions.
func TestEvictionRecordsTheDisruption(t *testing.T) {
	cs, ns := start(t, false)
	ctx := context.Background()
	for _, name := range []string{"a", "b"} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		p, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		setReady(t, cs, p, true)
	}
	createBudget(t, cs, ns, "web", "web", policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1))})
	// The controller's work, by hand: one disruption allowed.
	b, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: 1, CurrentHealthy: 2, DesiredHealthy: 1, ExpectedPods: 2}
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := evict(cs, ns, "a", &metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](7)}); err != nil {
		t.Fatal(err)
	}
	p, err := cs.CoreV1().Pods(ns).Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != 7 {
		t.Errorf("deletion grace period %v, want 7 from the eviction", p.DeletionGracePeriodSeconds)
	}
	var cond *corev1.PodCondition
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.DisruptionTarget {
			cond = &p.Status.Conditions[i]
		}
	}
	if cond == nil || cond.Status != corev1.ConditionTrue || cond.Reason != "EvictionByEvictionAPI" || cond.Message != "Eviction API: evicting" {
		t.Errorf("DisruptionTarget condition %+v", cond)
	}
	b, err = cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Status.DisruptedPods["a"]; !ok || b.Status.DisruptionsAllowed != 0 {
		t.Errorf("budget status after the eviction: %+v", b.Status)
	}
	if s, r := condition(b); s != metav1.ConditionFalse || r != policyv1.InsufficientPodsReason {
		t.Errorf("condition %s %s, want False InsufficientPods", s, r)
	}
}

// The eviction's decisions that need no controller: what upstream
// evicts without asking the budget, and what it refuses.
func TestEvictionDecisions(t *testing.T) {
	cs, ns := start(t, false)
	ctx := context.Background()
	zero := policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	budget := func(name, app string, spec policyv1.PodDisruptionBudgetSpec, status *policyv1.PodDisruptionBudgetStatus) {
		createBudget(t, cs, ns, name, app, spec)
		if status == nil {
			return
		}
		b, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b.Status = *status
		if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	one := policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1))}

	t.Run("terminal pods go whatever the budget", func(t *testing.T) {
		budget("done", "done", one, &zero)
		p := createPod(t, cs, ns, "done", "done", false, nil)
		p.Status.Phase = corev1.PodSucceeded
		if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := evict(cs, ns, "done", nil); err != nil || !gone(t, cs, ns, "done") {
			t.Errorf("eviction of a Succeeded pod: %v", err)
		}
	})
	t.Run("pending pods go whatever the budget", func(t *testing.T) {
		budget("pending", "pending", one, &zero)
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pending", Labels: map[string]string{"app": "pending"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := evict(cs, ns, "pending", nil); err != nil || !gone(t, cs, ns, "pending") {
			t.Errorf("eviction of a Pending pod: %v", err)
		}
	})
	t.Run("a budget not yet processed answers 429", func(t *testing.T) {
		budget("new", "new", one, nil)
		createPod(t, cs, ns, "new", "new", true, nil)
		err := evict(cs, ns, "new", nil)
		if !apierrors.IsTooManyRequests(err) || budgetCause(err) != "The disruption budget new is still being processed by the server." {
			t.Errorf("eviction under an unprocessed budget: %v (cause %q)", err, budgetCause(err))
		}
		if s, ok := apierrors.SuggestsClientDelay(err); !ok || s != 10 {
			t.Errorf("retry after %d s (%v), want 10", s, ok)
		}
	})
	t.Run("two budgets answer 500", func(t *testing.T) {
		budget("two-a", "two", one, &zero)
		budget("two-b", "two", one, &zero)
		createPod(t, cs, ns, "two", "two", true, nil)
		err := evict(cs, ns, "two", nil)
		var se *apierrors.StatusError
		if !errors.As(err, &se) || se.ErrStatus.Code != http.StatusInternalServerError ||
			se.ErrStatus.Message != "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support." {
			t.Errorf("eviction under two budgets: %v", err)
		}
	})
	t.Run("an unready pod goes when the budget is met without it", func(t *testing.T) {
		met := policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, CurrentHealthy: 2, DesiredHealthy: 2, ExpectedPods: 3}
		budget("met", "met", one, &met)
		createPod(t, cs, ns, "met", "met", false, nil)
		if err := evict(cs, ns, "met", nil); err != nil || !gone(t, cs, ns, "met") {
			t.Errorf("eviction of an unready pod under a met budget: %v", err)
		}
		b, _ := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "met", metav1.GetOptions{})
		if len(b.Status.DisruptedPods) != 0 {
			t.Errorf("the unready pod took a disruption: %v", b.Status.DisruptedPods)
		}
	})
	t.Run("an unready pod stays when the budget is not met (IfHealthyBudget)", func(t *testing.T) {
		short := policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, CurrentHealthy: 1, DesiredHealthy: 2, ExpectedPods: 3}
		budget("short", "short", one, &short)
		createPod(t, cs, ns, "short", "short", false, nil)
		if err := evict(cs, ns, "short", nil); !apierrors.IsTooManyRequests(err) {
			t.Errorf("eviction of an unready pod under a short budget: %v, want 429", err)
		}
	})
	t.Run("AlwaysAllow lets an unready pod go", func(t *testing.T) {
		short := policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, CurrentHealthy: 1, DesiredHealthy: 2, ExpectedPods: 3}
		budget("always", "always", policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)),
			UnhealthyPodEvictionPolicy: ptr.To(policyv1.AlwaysAllow)}, &short)
		createPod(t, cs, ns, "always", "always", false, nil)
		if err := evict(cs, ns, "always", nil); err != nil || !gone(t, cs, ns, "always") {
			t.Errorf("eviction under AlwaysAllow: %v", err)
		}
	})
	t.Run("dry run changes nothing", func(t *testing.T) {
		allowed := policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, CurrentHealthy: 2, DesiredHealthy: 1, ExpectedPods: 2, DisruptionsAllowed: 1}
		budget("dry", "dry", one, &allowed)
		createPod(t, cs, ns, "dry", "dry", true, nil)
		if err := evict(cs, ns, "dry", &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatal(err)
		}
		b, _ := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "dry", metav1.GetOptions{})
		if gone(t, cs, ns, "dry") || b.Status.DisruptionsAllowed != 1 || len(b.Status.DisruptedPods) != 0 {
			t.Errorf("a dry-run eviction changed something: pod gone %v, status %+v", gone(t, cs, ns, "dry"), b.Status)
		}
	})
	t.Run("no budget: the pod goes", func(t *testing.T) {
		createPod(t, cs, ns, "free", "free", true, nil)
		if err := evict(cs, ns, "free", nil); err != nil || !gone(t, cs, ns, "free") {
			t.Errorf("eviction without a budget: %v", err)
		}
	})
	t.Run("a missing pod is 404", func(t *testing.T) {
		if err := evict(cs, ns, "nobody", nil); !apierrors.IsNotFound(err) {
			t.Errorf("eviction of a missing pod: %v", err)
		}
	})
}

// Evictions racing on one budget each take exactly one of its allowed
// disruptions: of twelve at once under a budget allowing five, five
// succeed and record their pod in disruptedPods, seven get the 429, and
// none is lost or taken twice (the evictions take turns on the budget,
// each write still conditional on the budget as read).
func TestConcurrentEvictionsTakeOneDisruptionEach(t *testing.T) {
	cs, ns := start(t, false)
	ctx := context.Background()
	const pods, allowed = 12, 5
	for i := range pods {
		createPod(t, cs, ns, fmt.Sprintf("p%d", i), "web", true, nil)
	}
	createBudget(t, cs, ns, "web", "web", policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(pods - allowed))})
	// The controller's work, by hand, so that nothing but the evictions
	// writes the budget.
	b, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: allowed, CurrentHealthy: pods, DesiredHealthy: pods - allowed, ExpectedPods: pods}
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	errs := make([]error, pods)
	var wg sync.WaitGroup
	for i := range pods {
		wg.Go(func() { errs[i] = evict(cs, ns, fmt.Sprintf("p%d", i), nil) })
	}
	wg.Wait()
	var evicted []string
	refused := 0
	for i, err := range errs {
		switch {
		case err == nil:
			evicted = append(evicted, fmt.Sprintf("p%d", i))
		case apierrors.IsTooManyRequests(err):
			refused++
		default:
			t.Errorf("eviction of p%d: %v", i, err)
		}
	}
	if len(evicted) != allowed || refused != pods-allowed {
		t.Fatalf("%d evicted (%v), %d refused; want %d and %d", len(evicted), evicted, refused, allowed, pods-allowed)
	}
	b, err = cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Status.DisruptionsAllowed != 0 || len(b.Status.DisruptedPods) != allowed {
		t.Errorf("budget status %+v, want 0 allowed and the %d evicted pods disrupted", b.Status, allowed)
	}
	for _, name := range evicted {
		if _, ok := b.Status.DisruptedPods[name]; !ok {
			t.Errorf("evicted pod %s is not in disruptedPods %v", name, b.Status.DisruptedPods)
		}
	}
}
