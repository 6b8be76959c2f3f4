package replication_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/controllers/replication"
)

// start runs the replication manager and a stand-in node that marks the
// pods of the new namespace Running and Ready.
func start(t *testing.T) (kubernetes.Interface, string) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	rm, err := replication.New(replication.Options{Client: cs})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "rc-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { rm.Run(ctx) })
	wg.Go(func() {
		for ctx.Err() == nil {
			pods, err := cs.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{})
			if err == nil {
				for _, p := range pods.Items {
					if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodRunning {
						p.Status.Phase = corev1.PodRunning
						p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
						_, _ = cs.CoreV1().Pods(ns.Name).UpdateStatus(ctx, &p, metav1.UpdateOptions{})
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
	return cs, ns.Name
}

func eventually(t *testing.T, what string, f func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 20*time.Second, true, f); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func livePods(ctx context.Context, cs kubernetes.Interface, ns string) ([]corev1.Pod, error) {
	l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	const path = "/usr/bin/kubectl"
	if _, err := os.Stat(path); err != nil {
		t.Skip("kubectl not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, append([]string{"--kubeconfig", srv.KubeconfigPath()}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// A ReplicationController gets its pods, owned by it, and its status
// from the ReplicaSet controller's logic; kubectl scale (through
// replicationcontrollers/scale) moves it, and an orphan pod its selector
// matches is adopted.
func TestReplicationControllerKeepsItsPods(t *testing.T) {
	cs, ns := start(t)
	ctx := context.Background()
	rc := &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ReplicationControllerSpec{
		Replicas: ptr.To[int32](3),
		Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}},
	}}
	rc, err := cs.CoreV1().ReplicationControllers(ns).Create(ctx, rc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Upstream's defaults: the selector and labels from the template.
	if diff := cmp.Diff(map[string]string{"app": "web"}, rc.Spec.Selector); diff != "" {
		t.Errorf("defaulted selector (-want +got):\n%s", diff)
	}
	eventually(t, "3 ready replicas", func(ctx context.Context) (bool, error) {
		rc, err := cs.CoreV1().ReplicationControllers(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := rc.Status
		return s.Replicas == 3 && s.ReadyReplicas == 3 && s.AvailableReplicas == 3 && s.FullyLabeledReplicas == 3 && s.ObservedGeneration == rc.Generation, nil
	})
	pods, err := livePods(ctx, cs, ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.Kind != "ReplicationController" || ref.APIVersion != "v1" || ref.UID != rc.UID || !strings.HasPrefix(p.Name, "web-") {
			t.Errorf("pod %s controlled by %+v", p.Name, ref)
		}
	}
	if out := kubectl(t, "-n", ns, "get", "rc", "web"); !strings.Contains(out, "DESIRED") || !strings.Contains(out, "web    3         3         3") {
		t.Errorf("kubectl get rc:\n%s", out)
	}

	kubectl(t, "-n", ns, "scale", "rc", "web", "--replicas=1")
	eventually(t, "scaled down to 1", func(ctx context.Context) (bool, error) {
		pods, err := livePods(ctx, cs, ns)
		return len(pods) == 1, err
	})

	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Adopted, then one of the two goes: the controller keeps 1.
	eventually(t, "the orphan adopted and the count kept", func(ctx context.Context) (bool, error) {
		pods, err := livePods(ctx, cs, ns)
		if err != nil || len(pods) != 1 {
			return false, err
		}
		ref := metav1.GetControllerOf(&pods[0])
		return ref != nil && ref.UID == rc.UID, nil
	})
}

// A status that counts more ready than existing replicas is refused with
// upstream's path and message (the ReplicaSet's rules).
func TestReplicationControllerStatusIsValidated(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ctx := context.Background()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "rc-status-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := cs.CoreV1().ReplicationControllers(ns.Name).Create(ctx, &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](0), Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rc.Status = corev1.ReplicationControllerStatus{Replicas: 1, ReadyReplicas: 2, AvailableReplicas: 1}
	_, err = cs.CoreV1().ReplicationControllers(ns.Name).UpdateStatus(ctx, rc, metav1.UpdateOptions{})
	if err == nil || !strings.Contains(err.Error(), "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas") {
		t.Errorf("status update: %v", err)
	}
}
