package disruption_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/controllers"
)

const kubectlPath = "/usr/bin/kubectl"

func kubectlCmd(t *testing.T, ctx context.Context, args ...string) *exec.Cmd {
	t.Helper()
	if _, err := os.Stat(kubectlPath); err != nil {
		t.Skip("kubectl not installed")
	}
	cmd := exec.CommandContext(ctx, kubectlPath, append([]string{"--kubeconfig", srv.KubeconfigPath()}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	return cmd
}

func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := kubectlCmd(t, ctx, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// syncBuffer is an output kubectl writes to while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// standInNodes plays the scheduler and the kubelets of nodes for the pods
// of ns: a pending pod is bound to the first schedulable node, a bound
// pod runs, and is Ready unless holdReady; a pod being deleted is
// finished off (what a kubelet does once its containers stopped).
func standInNodes(ctx context.Context, cs kubernetes.Interface, ns string, nodes []string, holdReady *atomic.Bool) {
	for ctx.Err() == nil {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, p := range pods.Items {
				switch {
				case p.DeletionTimestamp != nil:
					_ = cs.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
				case p.Spec.NodeName == "":
					for _, n := range nodes {
						node, err := cs.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
						if err != nil || node.Spec.Unschedulable {
							continue
						}
						_ = cs.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name},
							Target: corev1.ObjectReference{Kind: "Node", Name: n}}, metav1.CreateOptions{})
						break
					}
				case !holdReady.Load() && !ready(&p) || p.Status.Phase != corev1.PodRunning:
					status := corev1.ConditionTrue
					if holdReady.Load() {
						status = corev1.ConditionFalse
					}
					p.Status.Phase = corev1.PodRunning
					p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
					_, _ = cs.CoreV1().Pods(ns).UpdateStatus(ctx, &p, metav1.UpdateOptions{})
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// kubectl drain of a node running both replicas of a Deployment whose
// budget keeps one available: the first pod is evicted, the second is
// refused (429) while its replacement is not ready and kubectl retries,
// and the drain finishes once the replacement is ready.
func TestKubectlDrainWaitsForTheBudget(t *testing.T) {
	cs, ns := start(t, false)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	m, err := controllers.New(controllers.Options{Config: srv.RESTConfig(),
		Names: []string{controllers.Deployment, controllers.ReplicaSet, controllers.Disruption}})
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { m.Run(ctx) })
	nodes := []string{ns + "-n1", ns + "-n2"}
	for _, n := range nodes {
		if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), n, metav1.DeleteOptions{}) })
	}
	var holdReady atomic.Bool
	wg.Go(func() { standInNodes(ctx, cs, ns, nodes, &holdReady) })

	kubectl(t, "-n", ns, "create", "deployment", "web", "--image=busybox", "--replicas=2")
	kubectl(t, "-n", ns, "create", "poddisruptionbudget", "web", "--selector=app=web", "--min-available=1")
	waitStatus(t, cs, ns, "web", 2, 1, 2, 1)
	if out := kubectl(t, "-n", ns, "get", "pdb", "web"); !strings.Contains(out, "MIN AVAILABLE") || !strings.Contains(out, "ALLOWED DISRUPTIONS") {
		t.Errorf("kubectl get pdb:\n%s", out)
	}

	holdReady.Store(true) // replacements start but are not ready
	out := &syncBuffer{}
	drain := kubectlCmd(t, ctx, "drain", nodes[0], "--ignore-daemonsets", "--timeout=90s")
	drain.Stdout, drain.Stderr = out, out
	if err := drain.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- drain.Wait() }()

	// Blocked: one pod evicted, the other refused by the budget.
	eventually(t, "the drain blocked by the budget", func(context.Context) (bool, error) {
		select {
		case err := <-done:
			t.Fatalf("the drain ended before the replacement was ready: %v\n%s", err, out)
		default:
		}
		return strings.Contains(out.String(), "Cannot evict pod as it would violate the pod's disruption budget."), nil
	})
	// kubectl evicts both pods at once: the budget lets one go, and the
	// other is refused (or both are refused a moment, the loser of the
	// budget's update and the one over budget, and kubectl retries after
	// 5 s): one pod, and only one, is left while the drain is blocked.
	live := func() int {
		onNode, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + nodes[0]})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range onNode.Items {
			if p.DeletionTimestamp == nil {
				n++
			}
		}
		return n
	}
	eventually(t, "one pod left on the drained node while blocked", func(context.Context) (bool, error) {
		return live() == 1, nil
	})
	time.Sleep(6 * time.Second) // past kubectl's retry: the budget still holds
	if n := live(); n != 1 {
		t.Errorf("%d pods left on the drained node while blocked, want 1", n)
	}

	holdReady.Store(false) // the replacement becomes ready
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("kubectl drain: %v\n%s", err, out)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the drain did not finish once the replacement was ready:\n%s", out)
	}
	if !strings.Contains(out.String(), "node/"+nodes[0]+" drained") {
		t.Errorf("kubectl drain said:\n%s", out)
	}
	onNode, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + nodes[0]})
	if err != nil || len(onNode.Items) != 0 {
		t.Errorf("pods left on the drained node: %v %v", onNode, err)
	}
}
