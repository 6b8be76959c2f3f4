package daemonset_test

import (
	"context"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/controllers/daemonset"
	"github.com/kite-project/kite/controllers/scheduler"
)

// start runs the DaemonSet controller and the scheduler, which places the
// daemon pods, and returns a namespace of the test's own.
func start(t testing.TB) (kubernetes.Interface, string) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	dc, err := daemonset.New(daemonset.Options{Client: cs})
	if err != nil {
		t.Fatal(err)
	}
	sched, err := scheduler.New(scheduler.Options{Client: cs})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { dc.Run(ctx) })
	wg.Go(func() { sched.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ds-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cs, ns.Name
}

// createNode registers a node (no agent behind it) labelled for the
// test, and removes it when the test ends.
func createNode(t testing.TB, cs kubernetes.Interface, name, label string) {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"test": label}}}
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
	n.Status.Capacity = n.Status.Allocatable
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
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
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

func newDaemonSet(name, label string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{NodeSelector: map[string]string{"test": label},
					Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}},
			},
		},
	}
}

// podsByNode maps node name to the set's bound pods (not terminating)
// there; unbound counts those not yet placed.
func podsByNode(ctx context.Context, cs kubernetes.Interface, ns string) (map[string][]corev1.Pod, int, error) {
	l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, 0, err
	}
	out := map[string][]corev1.Pod{}
	unbound := 0
	for _, p := range l.Items {
		switch {
		case p.DeletionTimestamp != nil:
		case p.Spec.NodeName == "":
			unbound++
		default:
			out[p.Spec.NodeName] = append(out[p.Spec.NodeName], p)
		}
	}
	return out, unbound, nil
}

func eventually(t *testing.T, what string, f func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 20*time.Second, true, f); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// onePerNode says every named node, and no other, has exactly one pod.
func onePerNode(byNode map[string][]corev1.Pod, unbound int, nodes ...string) bool {
	if unbound != 0 || len(byNode) != len(nodes) {
		return false
	}
	for _, n := range nodes {
		if len(byNode[n]) != 1 {
			return false
		}
	}
	return true
}

// TestDaemonSetRunsOnePodPerNodeAndFollowsNodes: a DaemonSet over two
// nodes gets one pod on each, placed by the scheduler through the node
// affinity; a third node joining gets one; a node tainted NoExecute loses
// its pod; the status counts them.
func TestDaemonSetRunsOnePodPerNodeAndFollowsNodes(t *testing.T) {
	cs, ns := start(t)
	ctx := context.Background()
	createNode(t, cs, ns+"-n1", ns)
	createNode(t, cs, ns+"-n2", ns)
	if _, err := cs.AppsV1().DaemonSets(ns).Create(ctx, newDaemonSet("agent", ns), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var byNode map[string][]corev1.Pod
	eventually(t, "one pod on each of two nodes", func(ctx context.Context) (bool, error) {
		m, unbound, err := podsByNode(ctx, cs, ns)
		byNode = m
		return onePerNode(m, unbound, ns+"-n1", ns+"-n2"), err
	})
	p := byNode[ns+"-n1"][0]
	if daemonset.TargetNode(&p) != ns+"-n1" || p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == "" || p.Labels["pod-template-generation"] != "1" {
		t.Errorf("pod %s: affinity %+v labels %v", p.Name, p.Spec.Affinity, p.Labels)
	}
	createNode(t, cs, ns+"-n3", ns)
	eventually(t, "a pod on the joining node", func(ctx context.Context) (bool, error) {
		m, unbound, err := podsByNode(ctx, cs, ns)
		return onePerNode(m, unbound, ns+"-n1", ns+"-n2", ns+"-n3"), err
	})
	n1, err := cs.CoreV1().Nodes().Get(ctx, ns+"-n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n1.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoExecute}}
	if _, err := cs.CoreV1().Nodes().Update(ctx, n1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the tainted node's pod gone", func(ctx context.Context) (bool, error) {
		m, unbound, err := podsByNode(ctx, cs, ns)
		return onePerNode(m, unbound, ns+"-n2", ns+"-n3"), err
	})
	eventually(t, "status", func(ctx context.Context) (bool, error) {
		ds, err := cs.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
		s := ds.Status
		return err == nil && s.DesiredNumberScheduled == 2 && s.CurrentNumberScheduled == 2 && s.UpdatedNumberScheduled == 2 &&
			s.NumberMisscheduled == 0 && s.NumberUnavailable == 2 && s.ObservedGeneration == 1, err
	})
}

// TestDaemonSetRollingUpdate: a new template replaces the pods node by
// node (maxUnavailable 1), each new pod at the new revision; once Ready
// every node runs the new template.
func TestDaemonSetRollingUpdate(t *testing.T) {
	cs, ns := start(t)
	ctx := context.Background()
	for _, n := range []string{"a", "b", "c"} {
		createNode(t, cs, ns+"-"+n, ns)
	}
	defer playNodes(cs, ns)()
	if _, err := cs.AppsV1().DaemonSets(ns).Create(ctx, newDaemonSet("log", ns), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "three ready", func(ctx context.Context) (bool, error) {
		ds, err := cs.AppsV1().DaemonSets(ns).Get(ctx, "log", metav1.GetOptions{})
		return err == nil && ds.Status.NumberAvailable == 3, err
	})
	ds, err := cs.AppsV1().DaemonSets(ns).Get(ctx, "log", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ds.Spec.Template.Spec.Containers[0].Image = "busybox:2"
	if _, err := cs.AppsV1().DaemonSets(ns).Update(ctx, ds, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	maxGone := 0
	eventually(t, "rolled out", func(ctx context.Context) (bool, error) {
		m, _, err := podsByNode(ctx, cs, ns)
		maxGone = max(maxGone, 3-len(m))
		ds, gerr := cs.AppsV1().DaemonSets(ns).Get(ctx, "log", metav1.GetOptions{})
		if err != nil || gerr != nil {
			return false, nil
		}
		for _, pods := range m {
			for _, p := range pods {
				if p.Spec.Containers[0].Image != "busybox:2" {
					return false, nil
				}
			}
		}
		return len(m) == 3 && ds.Status.UpdatedNumberScheduled == 3 && ds.Status.NumberAvailable == 3 && ds.Status.ObservedGeneration == 2, nil
	})
	if maxGone > 1 {
		t.Errorf("%d nodes were without a pod at once, maxUnavailable is 1", maxGone)
	}
	revs, err := cs.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(revs.Items) != 2 {
		t.Errorf("revisions: %d (%v), want 2", len(revs.Items), err)
	}
}

// playNodes plays the nodes of ns's pods until the returned stop is
// called: every bound pod runs and is Ready, and one being deleted is gone
// at once, as a kubelet removes it (a daemon pod's successor waits for
// that).
func playNodes(cs kubernetes.Interface, ns string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			if l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
				for _, p := range l.Items {
					if p.DeletionTimestamp != nil {
						_ = cs.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
						continue
					}
					if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodRunning {
						p.Status.Phase = corev1.PodRunning
						p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
						_, _ = cs.CoreV1().Pods(ns).UpdateStatus(ctx, &p, metav1.UpdateOptions{})
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}
