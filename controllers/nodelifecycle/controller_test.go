package nodelifecycle_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/controllers/nodelifecycle"
	"github.com/kite-project/kite/controllers/tainteviction"
)

const grace = time.Second

func client(t *testing.T) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// run starts the node lifecycle and taint eviction controllers with a one
// second grace period, stopped when the test ends.
func run(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	nl, err := nodelifecycle.New(nodelifecycle.Options{Client: cs, GracePeriod: grace, MonitorPeriod: 100 * time.Millisecond, EvictionRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	te, err := tainteviction.New(tainteviction.Options{Client: cs})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { nl.Run(ctx) })
	wg.Go(func() { te.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// agent plays a node agent: it registers the node with a Ready
// condition and a Lease, and renews the Lease until stopped.
type agent struct {
	t      *testing.T
	cs     kubernetes.Interface
	name   string
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// mu guards lastRenew, the time of the last successful renewal.
	mu        sync.Mutex
	lastRenew time.Time
}

func startAgent(t *testing.T, cs kubernetes.Interface, name string, ready v1.ConditionStatus) *agent {
	t.Helper()
	ctx := context.Background()
	now := metav1.Now()
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: ready, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}
	created, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
	if len(created.Status.Conditions) == 0 {
		created.Status = n.Status
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	secs := int32(1)
	rt := metav1.NewMicroTime(time.Now())
	_, err = cs.CoordinationV1().Leases(v1.NamespaceNodeLease).Create(ctx, &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       coordv1.LeaseSpec{HolderIdentity: &name, LeaseDurationSeconds: &secs, RenewTime: &rt},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create lease %s: %v", name, err)
	}
	a := &agent{t: t, cs: cs, name: name}
	a.renew()
	t.Cleanup(func() {
		a.stop()
		_ = cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = cs.CoordinationV1().Leases(v1.NamespaceNodeLease).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return a
}

// renew renews the Lease every 200 ms until stop.
func (a *agent) renew() {
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	a.wg.Go(func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			leases := a.cs.CoordinationV1().Leases(v1.NamespaceNodeLease)
			l, err := leases.Get(ctx, a.name, metav1.GetOptions{})
			if err != nil {
				continue
			}
			rt := metav1.NewMicroTime(time.Now())
			l.Spec.RenewTime = &rt
			if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err == nil {
				a.mu.Lock()
				a.lastRenew = time.Now()
				a.mu.Unlock()
			}
		}
	})
}

func (a *agent) stop() {
	if a.cancel != nil {
		a.cancel()
		a.wg.Wait()
		a.cancel = nil
	}
}

// postReady writes a fresh Ready condition, as the agent does when it is
// back.
func (a *agent) postReady(status v1.ConditionStatus) {
	a.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := a.cs.CoreV1().Nodes().Get(ctx, a.name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		now := metav1.Now()
		n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: status, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}
		_, err = a.cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		a.t.Fatalf("post Ready for %s: %v", a.name, err)
	}
}

func eventually(t *testing.T, within time.Duration, what string, f func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, within, true, f); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func hasTaint(n *v1.Node, key string, effect v1.TaintEffect) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key && t.Effect == effect {
			return true
		}
	}
	return false
}

// nodeTainted says whether the node's not-ready and unreachable taints
// are exactly want.
func nodeTainted(cs kubernetes.Interface, name string, want ...v1.Taint) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ours := 0
		for _, t := range n.Spec.Taints {
			if t.Key == v1.TaintNodeNotReady || t.Key == v1.TaintNodeUnreachable {
				ours++
			}
		}
		if ours != len(want) {
			return false, nil
		}
		for _, w := range want {
			if !hasTaint(n, w.Key, w.Effect) {
				return false, nil
			}
		}
		return true, nil
	}
}

func taint(key string, effect v1.TaintEffect) v1.Taint { return v1.Taint{Key: key, Effect: effect} }

func bindPod(t *testing.T, cs kubernetes.Interface, ns, name, node string, tolerations ...v1.Toleration) {
	t.Helper()
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{
		NodeName: node, Tolerations: tolerations, Containers: []v1.Container{{Name: "c", Image: "busybox"}},
	}}
	if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
}

func namespace(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "nl-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func TestSilentNodeIsUnknownTaintedAndEvicted(t *testing.T) {
	cs := client(t)
	ns := namespace(t, cs)
	silent := startAgent(t, cs, "nl-silent", v1.ConditionTrue)
	startAgent(t, cs, "nl-healthy", v1.ConditionTrue)
	startAgent(t, cs, "nl-notready", v1.ConditionFalse)
	one, zero := int64(1), int64(0)
	bindPod(t, cs, ns, "short", "nl-silent", v1.Toleration{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &one})
	bindPod(t, cs, ns, "forever", "nl-silent", v1.Toleration{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute})
	bindPod(t, cs, ns, "defaulted", "nl-silent")
	bindPod(t, cs, ns, "on-notready", "nl-notready", v1.Toleration{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &zero})
	// The agent said "forever" is Ready.
	forever, err := cs.CoreV1().Pods(ns).Get(t.Context(), "forever", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	forever.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(t.Context(), forever, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	run(t, cs)

	eventually(t, 5*time.Second, "not-ready taints on the NotReady node", nodeTainted(cs, "nl-notready",
		taint(v1.TaintNodeNotReady, v1.TaintEffectNoSchedule), taint(v1.TaintNodeNotReady, v1.TaintEffectNoExecute)))
	// Healthy while the Lease is renewed, past the grace period.
	time.Sleep(grace + 300*time.Millisecond)
	n, err := cs.CoreV1().Nodes().Get(t.Context(), "nl-silent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Spec.Taints) != 0 {
		t.Fatalf("a node renewing its Lease got taints %v", n.Spec.Taints)
	}

	silent.stop()
	silent.mu.Lock()
	lastRenew := silent.lastRenew
	silent.mu.Unlock()
	eventually(t, 5*time.Second, "silent node Unknown", func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, "nl-silent", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeReady {
				return c.Status == v1.ConditionUnknown && c.Reason == nodelifecycle.ReasonUnknown && c.Message == nodelifecycle.MessageUnknown, nil
			}
		}
		return false, nil
	})
	if since := time.Since(lastRenew); since < grace {
		t.Fatalf("marked Unknown %v after the last renewal, before the %v grace period", since, grace)
	}
	eventually(t, 5*time.Second, "unreachable taints", nodeTainted(cs, "nl-silent",
		taint(v1.TaintNodeUnreachable, v1.TaintEffectNoSchedule), taint(v1.TaintNodeUnreachable, v1.TaintEffectNoExecute)))

	terminating := func(name string) func(ctx context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			if err != nil || p.DeletionTimestamp == nil {
				return false, err
			}
			for _, c := range p.Status.Conditions {
				if c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == "DeletionByTaintManager" {
					return true, nil
				}
			}
			return false, fmt.Errorf("pod %s deleted without the DisruptionTarget condition: %+v", name, p.Status.Conditions)
		}
	}
	eventually(t, 5*time.Second, "pod tolerating 1 s evicted", terminating("short"))
	eventually(t, 5*time.Second, "pod tolerating 0 s of not-ready evicted", terminating("on-notready"))
	eventually(t, 5*time.Second, "TaintManagerEviction event", func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{"involvedObject.name": "short", "reason": "TaintManagerEviction"}.String()})
		if err != nil || len(list.Items) == 0 {
			return false, err
		}
		want := "Marking for deletion Pod " + ns + "/short"
		if list.Items[0].Message != want {
			return false, fmt.Errorf("event %q, want %q", list.Items[0].Message, want)
		}
		return true, nil
	})
	eventually(t, 5*time.Second, "pods of the Unknown node not Ready", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "forever", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodReady {
				return c.Status == v1.ConditionFalse, nil
			}
		}
		return false, nil
	})
	for _, name := range []string{"forever", "defaulted"} {
		p, err := cs.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil {
			t.Fatalf("pod %s should stay (no tolerationSeconds, or the default 300 s): %v %v", name, err, p.DeletionTimestamp)
		}
	}

	// Back: Lease renewed and Ready posted, the taints go.
	silent.renew()
	silent.postReady(v1.ConditionTrue)
	eventually(t, 5*time.Second, "taints removed once healthy", nodeTainted(cs, "nl-silent"))
}

// With every node unhealthy, nothing is evicted: a one-node cluster whose
// agent restarts keeps its pods.
func TestFullDisruptionEvictsNothing(t *testing.T) {
	cs := client(t)
	ns := namespace(t, cs)
	solo := startAgent(t, cs, "nl-solo", v1.ConditionTrue)
	zero := int64(0)
	bindPod(t, cs, ns, "p", "nl-solo", v1.Toleration{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &zero})
	run(t, cs)
	solo.stop()
	eventually(t, 5*time.Second, "only the NoSchedule unreachable taint", nodeTainted(cs, "nl-solo", taint(v1.TaintNodeUnreachable, v1.TaintEffectNoSchedule)))
	time.Sleep(500 * time.Millisecond) // several monitor periods
	n, err := cs.CoreV1().Nodes().Get(t.Context(), "nl-solo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if hasTaint(n, v1.TaintNodeUnreachable, v1.TaintEffectNoExecute) {
		t.Fatalf("the only node got a NoExecute taint: %v", n.Spec.Taints)
	}
	p, err := cs.CoreV1().Pods(ns).Get(t.Context(), "p", metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp != nil {
		t.Fatalf("pod evicted in full disruption: %v %v", err, p.DeletionTimestamp)
	}
}
