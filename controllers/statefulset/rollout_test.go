package statefulset_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const kubectlPath = "/usr/bin/kubectl"

func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	if _, err := os.Stat(kubectlPath); err != nil {
		t.Skip("kubectl not installed")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath, append([]string{"--kubeconfig", srv.KubeconfigPath()}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// playNode marks every pod of ns Running and Ready as it appears, as a
// node would, until the test ends.
func playNode(t testing.TB, cs kubernetes.Interface, ns string) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err == nil {
				for _, p := range l.Items {
					if p.Status.Phase != corev1.PodRunning && p.DeletionTimestamp == nil {
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
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// TestKubectlRolloutOfAStatefulSet: kubectl rollout status, history,
// undo and restart and kubectl scale against the controller, as on a
// real cluster (where status says "partitioned roll out complete": the
// partition defaults to 0, and kubectl reports any partition so).
func TestKubectlRolloutOfAStatefulSet(t *testing.T) {
	cs, ns, _ := start(t)
	playNode(t, cs, ns)
	ctx := context.Background()
	s := newSet("app", 2)
	if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if out := kubectl(t, "-n", ns, "rollout", "status", "sts/app", "--timeout=30s"); !strings.Contains(out, "partitioned roll out complete: 2 new pods have been updated...") {
		t.Errorf("rollout status: %s", out)
	}
	kubectl(t, "-n", ns, "set", "image", "sts/app", "c=busybox:2")
	if out := kubectl(t, "-n", ns, "rollout", "status", "sts/app", "--timeout=30s"); !strings.Contains(out, "partitioned roll out complete: 2 new pods have been updated...") {
		t.Errorf("rollout status after set image: %s", out)
	}
	if out := kubectl(t, "-n", ns, "rollout", "history", "sts/app"); !strings.Contains(out, "REVISION") || !strings.Contains(out, "\n1 ") || !strings.Contains(out, "\n2 ") {
		t.Errorf("rollout history:\n%s", out)
	}
	if out := kubectl(t, "-n", ns, "rollout", "undo", "sts/app"); !strings.Contains(out, "statefulset.apps/app rolled back") {
		t.Errorf("rollout undo: %s", out)
	}
	kubectl(t, "-n", ns, "rollout", "status", "sts/app", "--timeout=30s")
	for _, name := range []string{"app-0", "app-1"} {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.Spec.Containers[0].Image != "busybox:1" {
			t.Errorf("%s after undo: %v %v", name, err, p.Spec.Containers)
		}
	}
	if out := kubectl(t, "-n", ns, "rollout", "restart", "sts/app"); !strings.Contains(out, "statefulset.apps/app restarted") {
		t.Errorf("rollout restart: %s", out)
	}
	kubectl(t, "-n", ns, "rollout", "status", "sts/app", "--timeout=30s")
	got, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := cs.CoreV1().Pods(ns).Get(ctx, "app-0", metav1.GetOptions{})
	if err != nil || p.Annotations["kubectl.kubernetes.io/restartedAt"] == "" || p.Labels[appsv1.ControllerRevisionHashLabelKey] != got.Status.UpdateRevision {
		t.Errorf("app-0 after restart: %v annotations %v labels %v (update revision %s)", err, p.Annotations, p.Labels, got.Status.UpdateRevision)
	}
	kubectl(t, "-n", ns, "scale", "sts/app", "--replicas=3")
	if out := kubectl(t, "-n", ns, "rollout", "status", "sts/app", "--timeout=30s"); !strings.Contains(out, "partitioned roll out complete: 3 new pods have been updated...") {
		t.Errorf("rollout status after scale: %s", out)
	}
	if out := kubectl(t, "-n", ns, "get", "sts", "app"); !strings.Contains(out, "3/3") {
		t.Errorf("get sts:\n%s", out)
	}
}
