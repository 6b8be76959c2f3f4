package scheduler_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/controllers/scheduler"
)

func client(t testing.TB) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// createNode registers a node with allocatable resources and removes it
// when the test ends.
func createNode(t testing.TB, cs kubernetes.Interface, name, cpu string, maxPods int64) {
	t.Helper()
	ctx := context.Background()
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Status.Allocatable = v1.ResourceList{
		v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("16Gi"),
		v1.ResourcePods: *resource.NewQuantity(maxPods, resource.DecimalSI),
	}
	n.Status.Capacity = n.Status.Allocatable
	created, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
	if len(created.Status.Allocatable) == 0 {
		created.Status = n.Status
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("node %s status: %v", name, err)
		}
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		goneFromCache(t, "node "+name, func(ctx context.Context, opts metav1.ListOptions) (int, error) {
			opts.FieldSelector = "metadata.name=" + name
			l, err := cs.CoreV1().Nodes().List(ctx, opts)
			if err != nil {
				return 0, err
			}
			return len(l.Items), nil
		})
	})
}

// goneFromCache waits until a list at resourceVersion 0, which the watch
// cache answers with what it has, shows none of what count counts. A
// scheduler's informer lists so when it starts: until the cache has seen
// an earlier test's deletions, a new scheduler would still place pods on
// that test's nodes (as upstream's would on a node just deleted).
func goneFromCache(t testing.TB, what string, count func(ctx context.Context, opts metav1.ListOptions) (int, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := count(ctx, metav1.ListOptions{ResourceVersion: "0"})
		return err == nil && n == 0, err
	})
	if err != nil {
		t.Errorf("%s still in the watch cache: %v", what, err)
	}
}

func namespace(t testing.TB, cs kubernetes.Interface) string {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sched-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// No agent confirms graceful deletes here, and no namespace controller
	// runs: force the pods out so that they weigh on no later test's node.
	t.Cleanup(func() {
		zero := int64(0)
		_ = cs.CoreV1().Pods(ns.Name).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		goneFromCache(t, "pods of "+ns.Name, func(ctx context.Context, opts metav1.ListOptions) (int, error) {
			l, err := cs.CoreV1().Pods(ns.Name).List(ctx, opts)
			if err != nil {
				return 0, err
			}
			return len(l.Items), nil
		})
	})
	return ns.Name
}

func createPod(t testing.TB, cs kubernetes.Interface, ns, name, cpu, scheduler string) {
	t.Helper()
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{
		SchedulerName: scheduler,
		Containers: []v1.Container{{Name: "c", Image: "busybox",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}},
	}}
	if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
}

// runScheduler runs the default scheduler until the test ends.
func runScheduler(t testing.TB, cs kubernetes.Interface) *scheduler.Scheduler {
	t.Helper()
	s, err := scheduler.New(scheduler.Options{Client: cs})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

func waitIdle(t testing.TB, s *scheduler.Scheduler) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.WaitIdle(ctx); err != nil {
		t.Fatalf("scheduler not idle: %v", err)
	}
}

// eventually polls f until it returns true, for up to ten seconds.
func eventually(t testing.TB, what string, f func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, f); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func eventFor(ctx context.Context, cs kubernetes.Interface, ns, pod, reason string) (*v1.Event, error) {
	list, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": pod, "reason": reason}.String(),
	})
	if err != nil || len(list.Items) == 0 {
		return nil, err
	}
	return &list.Items[0], nil
}

func TestPodsAreBoundSpreadAndAnnounced(t *testing.T) {
	cs := client(t)
	sched := runScheduler(t, cs)
	ctx := t.Context()
	createNode(t, cs, "spread-a", "4", 110)
	createNode(t, cs, "spread-b", "4", 110)
	ns := namespace(t, cs)
	for i := range 4 {
		createPod(t, cs, ns, fmt.Sprintf("p%d", i), "1", "")
	}
	perNode := map[string]int{}
	eventually(t, "all four pods bound", func(ctx context.Context) (bool, error) {
		clear(perNode)
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				return false, nil
			}
			perNode[p.Spec.NodeName]++
		}
		return len(pods.Items) == 4, nil
	})
	waitIdle(t, sched)
	if perNode["spread-a"] != 2 || perNode["spread-b"] != 2 {
		t.Fatalf("pods per node = %v, want 2 on each (least allocated)", perNode)
	}
	for i := range 4 {
		name := fmt.Sprintf("p%d", i)
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("Successfully assigned %s/%s to %s", ns, name, p.Spec.NodeName)
		eventually(t, "Scheduled event of "+name, func(ctx context.Context) (bool, error) {
			ev, err := eventFor(ctx, cs, ns, name, "Scheduled")
			if ev == nil || err != nil {
				return false, err
			}
			if ev.Message != want || ev.Type != v1.EventTypeNormal || ev.Source.Component != "default-scheduler" {
				return false, fmt.Errorf("event %q %s from %s, want %q", ev.Message, ev.Type, ev.Source.Component, want)
			}
			return true, nil
		})
	}
}

func TestUnschedulablePodWaitsForAFittingNode(t *testing.T) {
	cs := client(t)
	sched := runScheduler(t, cs)
	ctx := t.Context()
	createNode(t, cs, "small-a", "1", 110)
	createNode(t, cs, "small-b", "1", 110)
	ns := namespace(t, cs)
	// Requests more than what is free on one node and than one node has
	// on the other: upstream's two preemption answers.
	createPod(t, cs, ns, "filler", "500m", "")
	eventually(t, "filler bound", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "filler", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName != "", err
	})
	createPod(t, cs, ns, "big", "800m", "")
	createPod(t, cs, ns, "huge", "2", "")
	// Not waitIdle alone: the scheduler may be idle because its watch has
	// not brought the new pods yet.
	eventually(t, "big bound to the node without the filler", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "big", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName != "", err
	})
	waitIdle(t, sched)
	filler, err := cs.CoreV1().Pods(ns).Get(ctx, "filler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	big, err := cs.CoreV1().Pods(ns).Get(ctx, "big", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if big.Spec.NodeName == filler.Spec.NodeName {
		t.Fatalf("big bound to %s, the filler's node, which has only 500m free", big.Spec.NodeName)
	}
	const hugeMsg = "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
	eventually(t, "huge is Unschedulable", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "huge", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled {
				if c.Status != v1.ConditionFalse || c.Reason != v1.PodReasonUnschedulable || c.Message != hugeMsg {
					return false, fmt.Errorf("PodScheduled = %s/%s %q, want False/Unschedulable %q", c.Status, c.Reason, c.Message, hugeMsg)
				}
				return p.Spec.NodeName == "", nil
			}
		}
		return false, nil
	})
	eventually(t, "FailedScheduling event", func(ctx context.Context) (bool, error) {
		ev, err := eventFor(ctx, cs, ns, "huge", "FailedScheduling")
		if ev == nil || err != nil {
			return false, err
		}
		if ev.Message != hugeMsg || ev.Type != v1.EventTypeWarning {
			return false, fmt.Errorf("event %s %q, want Warning %q", ev.Type, ev.Message, hugeMsg)
		}
		return true, nil
	})

	createNode(t, cs, "large", "4", 110)
	eventually(t, "huge bound once a node fits", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "huge", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Spec.NodeName != "" && p.Spec.NodeName != "large" {
			return false, fmt.Errorf("huge bound to %s, want large", p.Spec.NodeName)
		}
		return p.Spec.NodeName == "large", nil
	})
}

// A pod for another scheduler is left alone.
func TestOtherSchedulersPodsAreLeftAlone(t *testing.T) {
	cs := client(t)
	sched := runScheduler(t, cs)
	createNode(t, cs, "any", "4", 110)
	ns := namespace(t, cs)
	createPod(t, cs, ns, "theirs", "100m", "my-scheduler")
	waitIdle(t, sched)
	p, err := cs.CoreV1().Pods(ns).Get(t.Context(), "theirs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.NodeName != "" || len(p.Status.Conditions) != 0 {
		t.Fatalf("pod of my-scheduler was touched: node %q conditions %+v", p.Spec.NodeName, p.Status.Conditions)
	}
	if ev, _ := eventFor(t.Context(), cs, ns, "theirs", "FailedScheduling"); ev != nil {
		t.Fatalf("event %q for another scheduler's pod", ev.Message)
	}
}

// A pod that fits nowhere is bound once a bound pod finishes and frees
// its node: terminated pods hold nothing.
func TestUnschedulablePodIsBoundWhenAPodFinishes(t *testing.T) {
	cs := client(t)
	runScheduler(t, cs)
	ctx := t.Context()
	createNode(t, cs, "one-cpu", "1", 110)
	ns := namespace(t, cs)
	createPod(t, cs, ns, "first", "1", "")
	eventually(t, "first bound", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "first", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == "one-cpu", err
	})
	createPod(t, cs, ns, "second", "1", "")
	eventually(t, "second Unschedulable", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "second", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Reason == v1.PodReasonUnschedulable {
				return true, nil
			}
		}
		return false, nil
	})
	first, err := cs.CoreV1().Pods(ns).Get(ctx, "first", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first.Status.Phase = v1.PodSucceeded
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, first, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "second bound once first finished", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "second", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == "one-cpu", err
	})
}

// Pods decided in a burst count on their node before the watch shows them
// bound: a two-cpu node takes two one-cpu pods of three, never three.
func TestBurstNeverOvercommitsANode(t *testing.T) {
	cs := client(t)
	sched := runScheduler(t, cs)
	ctx := t.Context()
	createNode(t, cs, "two-cpu", "2", 110)
	ns := namespace(t, cs)
	for i := range 3 {
		createPod(t, cs, ns, fmt.Sprintf("burst-%d", i), "1", "")
	}
	eventually(t, "two bound, one Unschedulable", func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		bound, unschedulable := 0, 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				bound++
			}
			for _, c := range p.Status.Conditions {
				if c.Type == v1.PodScheduled && c.Reason == v1.PodReasonUnschedulable {
					unschedulable++
				}
			}
		}
		if bound > 2 {
			return false, fmt.Errorf("%d one-cpu pods bound to a two-cpu node", bound)
		}
		return bound == 2 && unschedulable == 1, nil
	})
	waitIdle(t, sched)
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=two-cpu"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 2 {
		t.Fatalf("%d pods on two-cpu after idle, want 2", len(pods.Items))
	}
}
