package disruption_test

import (
	"context"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/controllers/disruption"
	"github.com/kite-project/kite/controllers/scaleclient"
)

// start runs the disruption controller (unless without) and returns a
// client and a new namespace.
func start(t *testing.T, withController bool) (kubernetes.Interface, string) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	if withController {
		scales, err := scaleclient.New(srv.RESTConfig())
		if err != nil {
			t.Fatal(err)
		}
		dc, err := disruption.New(disruption.Options{Client: cs, Scales: scales})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { dc.Run(ctx) })
		t.Cleanup(func() { cancel(); wg.Wait() })
	}
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "pdb-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	return cs, ns.Name
}

func eventually(t *testing.T, what string, f func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 20*time.Second, true, f); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// createPod creates a pod of app, owned by owner when set, and plays its
// node: Running, and Ready when ready.
func createPod(t *testing.T, cs kubernetes.Interface, ns, name, app string, ready bool, owner *metav1.OwnerReference) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	p, err := cs.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return setReady(t, cs, p, ready)
}

func setReady(t *testing.T, cs kubernetes.Interface, p *corev1.Pod, ready bool) *corev1.Pod {
	t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
	p, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func createBudget(t *testing.T, cs kubernetes.Interface, ns, name, app string, spec policyv1.PodDisruptionBudgetSpec) {
	t.Helper()
	spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(context.Background(), &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitStatus waits until the budget's status has the counts (expected,
// desired, current, allowed) for its generation.
func waitStatus(t *testing.T, cs kubernetes.Interface, ns, name string, expected, desired, current, allowed int32) *policyv1.PodDisruptionBudget {
	t.Helper()
	var b *policyv1.PodDisruptionBudget
	eventually(t, "budget status", func(ctx context.Context) (bool, error) {
		var err error
		b, err = cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := b.Status
		return s.ObservedGeneration == b.Generation && s.ExpectedPods == expected && s.DesiredHealthy == desired &&
			s.CurrentHealthy == current && s.DisruptionsAllowed == allowed, nil
	})
	return b
}

func condition(b *policyv1.PodDisruptionBudget) (metav1.ConditionStatus, string) {
	c := apimeta.FindStatusCondition(b.Status.Conditions, policyv1.DisruptionAllowedCondition)
	if c == nil {
		return "", ""
	}
	return c.Status, c.Reason
}

// A budget's status follows its pods' readiness: healthy pods beyond
// minAvailable are disruptions allowed, and the condition says so.
func TestBudgetStatusFollowsPodReadiness(t *testing.T) {
	cs, ns := start(t, true)
	var pods []*corev1.Pod
	for _, name := range []string{"a", "b", "c"} {
		pods = append(pods, createPod(t, cs, ns, name, "web", true, nil))
	}
	createPod(t, cs, ns, "other", "db", true, nil)
	createBudget(t, cs, ns, "web", "web", policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(2))})
	b := waitStatus(t, cs, ns, "web", 3, 2, 3, 1)
	if s, r := condition(b); s != metav1.ConditionTrue || r != policyv1.SufficientPodsReason {
		t.Errorf("condition %s %s, want True SufficientPods", s, r)
	}
	setReady(t, cs, pods[0], false)
	b = waitStatus(t, cs, ns, "web", 3, 2, 2, 0)
	if s, r := condition(b); s != metav1.ConditionFalse || r != policyv1.InsufficientPodsReason {
		t.Errorf("condition %s %s, want False InsufficientPods", s, r)
	}
	// A spec change is observed: the new generation gets its status.
	b.Spec.MinAvailable = ptr.To(intstr.FromInt32(1))
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Update(context.Background(), b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	b = waitStatus(t, cs, ns, "web", 3, 1, 2, 1)
	if b.Generation != 2 {
		t.Errorf("generation %d after a spec change, want 2", b.Generation)
	}
}

// A percentage or maxUnavailable counts the replicas of the pods'
// controllers: a Deployment's through its ReplicaSet, anything else
// through its scale subresource; a pod whose controller cannot be found
// makes the budget fail safe.
func TestBudgetCountsTheControllersScale(t *testing.T) {
	cs, ns := start(t, true)
	ctx := context.Background()
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	d, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](4), Selector: sel, Template: tmpl}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := cs.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2), Selector: sel, Template: tmpl}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rsRef := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}
	createPod(t, cs, ns, "web-a", "web", true, rsRef)
	createPod(t, cs, ns, "web-b", "web", true, rsRef)
	createBudget(t, cs, ns, "web", "web", policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromString("25%"))})
	// The Deployment's 4 replicas, not the ReplicaSet's 2 nor the 2 pods.
	waitStatus(t, cs, ns, "web", 4, 3, 2, 0)

	// A pod controlled by the Deployment itself is counted through
	// deployments/scale (the path of StatefulSets and custom resources).
	dRef := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: ptr.To(true)}
	createPod(t, cs, ns, "api-a", "api", true, dRef)
	createPod(t, cs, ns, "api-b", "api", true, dRef)
	createBudget(t, cs, ns, "api", "api", policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromString("50%"))})
	waitStatus(t, cs, ns, "api", 4, 2, 2, 0)

	// A controller that is not there: no disruption, and SyncFailed.
	createPod(t, cs, ns, "lost", "lost", true, &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "gone", UID: "0000", Controller: ptr.To(true)})
	createBudget(t, cs, ns, "lost", "lost", policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1))})
	eventually(t, "fail-safe status", func(ctx context.Context) (bool, error) {
		b, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "lost", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s, r := condition(b)
		return s == metav1.ConditionFalse && r == policyv1.SyncFailedReason && b.Status.DisruptionsAllowed == 0, nil
	})
}
