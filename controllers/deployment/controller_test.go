package deployment_test

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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/controllers"
	"github.com/kite-project/kite/controllers/deployment"
)

const kubectlPath = "/usr/bin/kubectl"

func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	if _, err := os.Stat(kubectlPath); err != nil {
		t.Skip("kubectl not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath, append([]string{"--kubeconfig", srv.KubeconfigPath()}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// start runs the deployment, replicaset and garbage collector controllers
// and a stand-in node that marks every pod of ns Running and Ready through
// pods/status, as a kubelet would.
func start(t *testing.T) (kubernetes.Interface, string) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "deploy-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := controllers.New(controllers.Options{Config: srv.RESTConfig(),
		Names: []string{controllers.Deployment, controllers.ReplicaSet, controllers.GarbageCollector}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { m.Run(ctx) })
	wg.Go(func() { runNode(ctx, cs, ns.Name) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return cs, ns.Name
}

func runNode(ctx context.Context, cs kubernetes.Interface, ns string) {
	for ctx.Err() == nil {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, p := range pods.Items {
				if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodRunning {
					continue
				}
				p.Status.Phase = corev1.PodRunning
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
				_, _ = cs.CoreV1().Pods(ns).UpdateStatus(ctx, &p, metav1.UpdateOptions{})
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func eventually(t *testing.T, what string, f func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, f); err != nil {
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

func TestKubectlRollout(t *testing.T) {
	cs, ns := start(t)
	kubectl(t, "-n", ns, "create", "deployment", "web", "--image=busybox", "--replicas=3", "--", "sleep", "3600")
	if out := kubectl(t, "-n", ns, "rollout", "status", "deployment/web", "--timeout=60s"); !strings.Contains(out, `deployment "web" successfully rolled out`) {
		t.Fatalf("rollout status: %s", out)
	}
	d, err := cs.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Annotations[deployment.RevisionAnnotation] != "1" || d.Status.AvailableReplicas != 3 || d.Status.UpdatedReplicas != 3 || d.Generation != 1 {
		t.Errorf("after the first rollout: annotations %v status %+v", d.Annotations, d.Status)
	}
	if c := deployment.Condition(&d.Status, appsv1.DeploymentProgressing); c == nil || c.Reason != deployment.ReasonNewRSAvailable {
		t.Errorf("Progressing = %+v", c)
	}
	rsList, _ := cs.AppsV1().ReplicaSets(ns).List(context.Background(), metav1.ListOptions{})
	if len(rsList.Items) != 1 || rsList.Items[0].Name != "web-"+rsList.Items[0].Labels[deployment.HashLabel] {
		t.Fatalf("replica sets: %+v", rsList.Items)
	}

	kubectl(t, "-n", ns, "set", "image", "deployment/web", "busybox=busybox:1.36")
	kubectl(t, "-n", ns, "rollout", "status", "deployment/web", "--timeout=60s")
	eventually(t, "the old pods replaced", func(ctx context.Context) (bool, error) {
		pods, err := livePods(ctx, cs, ns)
		if err != nil {
			return false, err
		}
		for _, p := range pods {
			if p.Spec.Containers[0].Image != "busybox:1.36" {
				return false, nil
			}
		}
		return len(pods) == 3, nil
	})
	if out := kubectl(t, "-n", ns, "rollout", "history", "deployment/web"); !strings.Contains(out, "1 ") || !strings.Contains(out, "2 ") {
		t.Errorf("rollout history:\n%s", out)
	}

	kubectl(t, "-n", ns, "rollout", "undo", "deployment/web")
	kubectl(t, "-n", ns, "rollout", "status", "deployment/web", "--timeout=60s")
	d, _ = cs.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if d.Spec.Template.Spec.Containers[0].Image != "busybox" || d.Annotations[deployment.RevisionAnnotation] != "3" {
		t.Errorf("after undo: image %s revision %s", d.Spec.Template.Spec.Containers[0].Image, d.Annotations[deployment.RevisionAnnotation])
	}

	kubectl(t, "-n", ns, "rollout", "restart", "deployment/web")
	kubectl(t, "-n", ns, "rollout", "status", "deployment/web", "--timeout=60s")

	kubectl(t, "-n", ns, "scale", "deployment/web", "--replicas=5")
	kubectl(t, "-n", ns, "rollout", "status", "deployment/web", "--timeout=60s")
	eventually(t, "five pods", func(ctx context.Context) (bool, error) {
		pods, err := livePods(ctx, cs, ns)
		return len(pods) == 5, err
	})

	kubectl(t, "-n", ns, "delete", "deployment", "web")
	eventually(t, "replica sets and pods collected", func(ctx context.Context) (bool, error) {
		pods, err := livePods(ctx, cs, ns)
		if err != nil {
			return false, err
		}
		sets, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods) == 0 && len(sets.Items) == 0, err
	})
}

func TestRecreateAndPause(t *testing.T) {
	cs, ns := start(t)
	kubectl(t, "-n", ns, "create", "deployment", "db", "--image=busybox", "--replicas=2", "--", "sleep", "3600")
	kubectl(t, "-n", ns, "patch", "deployment/db", "-p", `{"spec":{"strategy":{"type":"Recreate","rollingUpdate":null}}}`)
	kubectl(t, "-n", ns, "rollout", "status", "deployment/db", "--timeout=60s")
	kubectl(t, "-n", ns, "rollout", "pause", "deployment/db")
	kubectl(t, "-n", ns, "set", "image", "deployment/db", "busybox=busybox:1.36")
	eventually(t, "paused condition", func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "db", metav1.GetOptions{})
		c := deployment.Condition(&d.Status, appsv1.DeploymentProgressing)
		return err == nil && c != nil && c.Reason == deployment.ReasonPaused, err
	})
	if sets, _ := cs.AppsV1().ReplicaSets(ns).List(context.Background(), metav1.ListOptions{}); len(sets.Items) != 1 {
		t.Errorf("a paused deployment made %d replica sets", len(sets.Items))
	}
	kubectl(t, "-n", ns, "rollout", "resume", "deployment/db")
	kubectl(t, "-n", ns, "rollout", "status", "deployment/db", "--timeout=60s")
	pods, err := livePods(context.Background(), cs, ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if p.Spec.Containers[0].Image != "busybox:1.36" {
			t.Errorf("pod %s runs %s after the Recreate rollout", p.Name, p.Spec.Containers[0].Image)
		}
	}
}

// TestRestartMidRolloutCreatesNoExtraPods stops the controllers while a
// Deployment's pods are being made and starts new ones: the rollout ends
// with exactly its replicas ever created.
func TestRestartMidRolloutCreatesNoExtraPods(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "restart-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cs.CoreV1().Pods(ns.Name).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	created := map[string]bool{}
	var mu sync.Mutex
	go func() {
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type == "ADDED" {
				mu.Lock()
				created[p.Name] = true
				mu.Unlock()
			}
		}
	}()
	run := func() (stop func()) {
		m, err := controllers.New(controllers.Options{Config: srv.RESTConfig(), Names: []string{controllers.Deployment, controllers.ReplicaSet}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { m.Run(ctx) })
		return func() { cancel(); wg.Wait() }
	}
	stop := run()
	kubectl(t, "-n", ns.Name, "create", "deployment", "web", "--image=busybox", "--replicas=40", "--", "sleep", "3600")
	eventually(t, "some pods made", func(ctx context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(created) > 0, nil
	})
	stop()
	stop = run()
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	var node sync.WaitGroup
	node.Go(func() { runNode(ctx, cs, ns.Name) })
	defer func() { cancel(); node.Wait() }()
	kubectl(t, "-n", ns.Name, "rollout", "status", "deployment/web", "--timeout=60s")
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(created) != 40 {
		pods, _ := cs.CoreV1().Pods(ns.Name).List(context.Background(), metav1.ListOptions{})
		sets, _ := cs.AppsV1().ReplicaSets(ns.Name).List(context.Background(), metav1.ListOptions{})
		t.Errorf("%d pods created for 40 replicas; %d pods now, %d replica sets", len(created), len(pods.Items), len(sets.Items))
	}
}

// TestDeploymentReportsTerminatingReplicas: the pods a scale-down deleted
// that are still going (held by a finalizer here) show in the
// Deployment's status.terminatingReplicas, summed from its ReplicaSets',
// until they are gone.
func TestDeploymentReportsTerminatingReplicas(t *testing.T) {
	cs, ns := start(t)
	ctx := context.Background()
	kubectl(t, "-n", ns, "create", "deployment", "held", "--image=busybox", "--replicas=3", "--", "sleep", "3600")
	// kubectl create deployment has no flag for the pods' finalizers.
	if _, err := cs.AppsV1().Deployments(ns).Patch(ctx, "held", types.MergePatchType,
		[]byte(`{"spec":{"template":{"metadata":{"finalizers":["example.com/hold"]}}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	status := func(what string, replicas, terminating int32) {
		t.Helper()
		eventually(t, what, func(ctx context.Context) (bool, error) {
			d, err := cs.AppsV1().Deployments(ns).Get(ctx, "held", metav1.GetOptions{})
			return err == nil && d.Status.ObservedGeneration == d.Generation && d.Status.Replicas == replicas && d.Status.UpdatedReplicas == replicas &&
				ptr.Equal(d.Status.TerminatingReplicas, &terminating), err
		})
	}
	status("rolled out to pods with the finalizer", 3, 0)
	// The first ReplicaSet's pods (without the finalizer) are gone; the
	// second's hold. Scale down.
	kubectl(t, "-n", ns, "scale", "deployment", "held", "--replicas=1")
	status("scaled to one, two terminating", 1, 2)
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if _, err := cs.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	status("terminating pods gone", 1, 0)
}
