package podsync

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestPodRuns: a pod bound to the node runs as a process and its status
// is what the kubelet would write.
func TestPodRuns(t *testing.T) {
	n := startNode(t, "node-run", Options{})
	p := n.create(t, "run", "web", v1.RestartPolicyAlways, "echo hello; exec sleep 600", func(p *v1.Pod) {
		p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
	})
	p = n.waitPod(t, p, "Running and Ready", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodRunning && condition(p, v1.PodReady) == v1.ConditionTrue
	})
	s := p.Status
	if len(s.ContainerStatuses) != 1 {
		t.Fatalf("containerStatuses = %+v", s.ContainerStatuses)
	}
	c := s.ContainerStatuses[0]
	if c.State.Running == nil || !c.Ready || c.Started == nil || !*c.Started || c.RestartCount != 0 || c.Image != "busybox" || !strings.HasPrefix(c.ContainerID, "kite-process://") {
		t.Errorf("container status = %+v", c)
	}
	if s.HostIP != "127.0.0.1" || s.PodIP != "127.0.0.1" || len(s.PodIPs) != 1 || s.StartTime == nil || s.QOSClass != v1.PodQOSBestEffort {
		t.Errorf("pod status = hostIP %q podIP %q podIPs %v startTime %v qos %s", s.HostIP, s.PodIP, s.PodIPs, s.StartTime, s.QOSClass)
	}
	for _, typ := range []v1.PodConditionType{v1.PodScheduled, v1.PodReadyToStartContainers, v1.PodInitialized, v1.ContainersReady, v1.PodReady} {
		if condition(p, typ) != v1.ConditionTrue {
			t.Errorf("condition %s = %q, want True", typ, condition(p, typ))
		}
	}
	log := filepath.Join(n.root, "pods", "run_web_"+string(p.UID), "main", "0.log")
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(log)
		if strings.Contains(string(b), " stdout F hello") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("log %s = %q, want a CRI line with hello", log, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Nothing changes now: nothing is written (no loop with the watch's
	// RECONCILE of the agent's own writes).
	rv := p.ResourceVersion
	time.Sleep(3 * time.Second)
	if got := n.waitPod(t, p, "still Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning }); got.ResourceVersion != rv {
		t.Errorf("an unchanged pod was written: resourceVersion %s -> %s; status %+v", rv, got.ResourceVersion, got.Status)
	}
	n.waitEvent(t, p, "Pulled", `Container image "busybox" already present on machine`)
	n.waitEvent(t, p, "Created", "Container created")
	n.waitEvent(t, p, "Started", "Container started")
}

// TestNeverExit3Fails: restartPolicy Never and exit 3 end Failed, exit
// code 3, reason Error, and nothing restarts.
func TestNeverExit3Fails(t *testing.T) {
	n := startNode(t, "node-fail", Options{})
	p := n.create(t, "fail", "job", v1.RestartPolicyNever, "echo it broke >&2; exit 3", func(p *v1.Pod) {
		p.Spec.Containers[0].TerminationMessagePolicy = v1.TerminationMessageFallbackToLogsOnError
	})
	p = n.waitPod(t, p, "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	c := p.Status.ContainerStatuses[0]
	if c.State.Terminated == nil || c.State.Terminated.ExitCode != 3 || c.State.Terminated.Reason != "Error" || c.RestartCount != 0 {
		t.Errorf("container status = %+v", c)
	}
	if c.State.Terminated != nil && c.State.Terminated.Message != "it broke\n" {
		t.Errorf("termination message = %q, want the log's tail (FallbackToLogsOnError)", c.State.Terminated.Message)
	}
	if condition(p, v1.PodReady) != v1.ConditionFalse {
		t.Errorf("Ready = %s, want False", condition(p, v1.PodReady))
	}
}

// TestCrashLoopBackOff: OnFailure with a failing command restarts with a
// growing restartCount and shows CrashLoopBackOff between restarts.
func TestCrashLoopBackOff(t *testing.T) {
	n := startNode(t, "node-crash", Options{BackOffInitial: 300 * time.Millisecond, BackOffMax: 2 * time.Second})
	p := n.create(t, "crash", "loop", v1.RestartPolicyOnFailure, "exit 1", nil)
	sawBackOff := false
	p = n.waitPod(t, p, "restartCount 3 with a CrashLoopBackOff seen", func(p *v1.Pod) bool {
		if len(p.Status.ContainerStatuses) == 0 {
			return false
		}
		c := p.Status.ContainerStatuses[0]
		if w := c.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
			sawBackOff = strings.HasPrefix(w.Message, "back-off ") && strings.Contains(w.Message, "restarting failed container=main pod=loop_crash(")
			if c.LastTerminationState.Terminated == nil || c.LastTerminationState.Terminated.ExitCode != 1 {
				t.Errorf("lastState while backing off = %+v", c.LastTerminationState)
			}
		}
		return sawBackOff && c.RestartCount >= 3
	})
	if p.Status.Phase != v1.PodRunning {
		t.Errorf("phase = %s, want Running (restarting)", p.Status.Phase)
	}
	n.waitEvent(t, p, "BackOff", "Back-off restarting failed container main in pod loop_crash("+string(p.UID)+")")
}

// TestGracefulDelete: deleting the pod runs the preStop hook, then the
// container's TERM trap within the grace period, then the agent removes
// the pod from the API.
func TestGracefulDelete(t *testing.T) {
	n := startNode(t, "node-delete", Options{})
	dir := t.TempDir()
	mark, pre := filepath.Join(dir, "term"), filepath.Join(dir, "prestop")
	p := n.create(t, "del", "web", v1.RestartPolicyAlways, "trap 'echo term > "+mark+"; exit 0' TERM; while true; do sleep 0.1; done", func(p *v1.Pod) {
		p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "echo pre > " + pre}}}}
	})
	n.waitPod(t, p, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	grace := int64(10)
	start := time.Now()
	if err := n.cs.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := n.cs.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod still in the API after a graceful delete: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if b, err := os.ReadFile(mark); err != nil || strings.TrimSpace(string(b)) != "term" {
		t.Errorf("TERM trap did not run: %q, %v", b, err)
	}
	if b, err := os.ReadFile(pre); err != nil || strings.TrimSpace(string(b)) != "pre" {
		t.Errorf("preStop hook did not run: %q, %v", b, err)
	}
	n.waitEvent(t, p, "Killing", "Stopping container main")
	if d := time.Since(start); d > 9*time.Second {
		t.Errorf("delete took %v: the trap should have ended the container at once", d)
	}
}

// TestMissingConfigMapKey: a missing key gives the container Waiting
// CreateContainerConfigError with upstream's message, and the node's other
// pods keep running.
func TestMissingConfigMapKey(t *testing.T) {
	n := startNode(t, "node-cfg", Options{})
	n.namespace(t, "cfg")
	if _, err := n.cs.CoreV1().ConfigMaps("cfg").Create(context.Background(), &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"a": "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	good := n.create(t, "cfg", "good", v1.RestartPolicyAlways, "exec sleep 600", nil)
	bad := n.create(t, "cfg", "bad", v1.RestartPolicyAlways, "exec sleep 600", func(p *v1.Pod) {
		p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "settings"}, Key: "missing"}}}}
	})
	nocmd := n.create(t, "cfg", "nocmd", v1.RestartPolicyAlways, "", func(p *v1.Pod) { p.Spec.Containers[0].Command = nil })
	bad = n.waitPod(t, bad, "CreateContainerConfigError", func(p *v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil && p.Status.ContainerStatuses[0].State.Waiting.Reason == "CreateContainerConfigError"
	})
	if msg := bad.Status.ContainerStatuses[0].State.Waiting.Message; msg != "couldn't find key missing in ConfigMap cfg/settings" {
		t.Errorf("message = %q", msg)
	}
	if bad.Status.Phase != v1.PodPending {
		t.Errorf("phase = %s, want Pending", bad.Status.Phase)
	}
	nocmd = n.waitPod(t, nocmd, "CreateContainerConfigError", func(p *v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil && p.Status.ContainerStatuses[0].State.Waiting.Reason == "CreateContainerConfigError"
	})
	if msg := nocmd.Status.ContainerStatuses[0].State.Waiting.Message; !strings.Contains(msg, "no command") {
		t.Errorf("no-command message = %q", msg)
	}
	n.waitEvent(t, bad, "Failed", "Error: couldn't find key missing in ConfigMap cfg/settings")
	n.waitPod(t, good, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	// Adding the key lets the pod start on a later retry.
	cm, _ := n.cs.CoreV1().ConfigMaps("cfg").Get(context.Background(), "settings", metav1.GetOptions{})
	cm.Data["missing"] = "now here"
	if _, err := n.cs.CoreV1().ConfigMaps("cfg").Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.waitPod(t, bad, "Running once the key exists", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })

	// A pod that never started is still deleted to the end: its final
	// status is Failed, its container ContainerStatusUnknown.
	if err := n.cs.CoreV1().Pods("cfg").Delete(context.Background(), nocmd.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := n.cs.CoreV1().Pods("cfg").Get(context.Background(), nocmd.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a deleted pod that never started stays in the API: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestForceDeleteStops: a pod removed from the API at once (grace 0) is
// gone from the api source, and the agent stops its containers.
func TestForceDeleteStops(t *testing.T) {
	n := startNode(t, "node-force", Options{})
	p := n.create(t, "force", "web", v1.RestartPolicyAlways, "exec sleep 600", nil)
	n.waitPod(t, p, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	if err := n.cs.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		cs := containersOf(t, n.rt, p)
		if len(cs) == 0 || cs[0].State == runtimeapi.ContainerState_CONTAINER_EXITED {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("containers of a removed pod: %v", cs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestInitContainersRunInOrder: init containers run one at a time, each to
// success, before the app container; a sidecar keeps running beside it.
func TestInitContainersRunInOrder(t *testing.T) {
	n := startNode(t, "node-init", Options{})
	dir := t.TempDir()
	always := v1.ContainerRestartPolicyAlways
	p := n.create(t, "init", "web", v1.RestartPolicyAlways, "cat "+dir+"/order > "+dir+"/seen; exec sleep 600", func(p *v1.Pod) {
		p.Spec.InitContainers = []v1.Container{
			{Name: "first", Image: "busybox", Command: []string{"sh", "-c", "sleep 0.3; echo first >> " + dir + "/order"}},
			{Name: "sidecar", Image: "busybox", RestartPolicy: &always, Command: []string{"sh", "-c", "echo sidecar >> " + dir + "/order; exec sleep 600"}},
			{Name: "second", Image: "busybox", Command: []string{"sh", "-c", "echo second >> " + dir + "/order"}},
		}
	})
	pending := n.waitPod(t, p, "Pending while initializing", func(p *v1.Pod) bool { return len(p.Status.InitContainerStatuses) == 3 })
	if pending.Status.Phase != v1.PodPending && pending.Status.Phase != v1.PodRunning {
		t.Errorf("phase while initializing = %s", pending.Status.Phase)
	}
	p = n.waitPod(t, p, "Running and Initialized", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodRunning && condition(p, v1.PodInitialized) == v1.ConditionTrue && condition(p, v1.PodReady) == v1.ConditionTrue
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(dir, "seen"))
		if string(b) == "first\nsidecar\nsecond\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the app container saw %q; want first, sidecar, second", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	st := map[string]v1.ContainerStatus{}
	for _, c := range p.Status.InitContainerStatuses {
		st[c.Name] = c
	}
	if c := st["first"]; c.State.Terminated == nil || c.State.Terminated.Reason != "Completed" || !c.Ready {
		t.Errorf("first = %+v", c)
	}
	if c := st["sidecar"]; c.State.Running == nil || !c.Ready {
		t.Errorf("sidecar = %+v", c)
	}
}

// TestFailedInitContainerFailsANeverPodWithAppContainersWaiting: as the
// conformance test "should not start app containers and fail the pod if
// init containers fail on a RestartNever pod", a failing init container
// fails the pod, the app container never runs and stays waiting with
// PodInitializing, and Initialized names the failed init container.
func TestFailedInitContainerFailsANeverPodWithAppContainersWaiting(t *testing.T) {
	n := startNode(t, "node-initfail", Options{})
	dir := t.TempDir()
	p := n.create(t, "initfail", "never", v1.RestartPolicyNever, "touch "+dir+"/ran", func(p *v1.Pod) {
		p.Spec.InitContainers = []v1.Container{
			{Name: "init1", Image: "busybox", Command: []string{"true"}},
			{Name: "init2", Image: "busybox", Command: []string{"false"}},
		}
	})
	p = n.waitPod(t, p, "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if len(p.Status.InitContainerStatuses) != 2 {
		t.Fatalf("init container statuses: %+v", p.Status.InitContainerStatuses)
	}
	if tt := p.Status.InitContainerStatuses[0].State.Terminated; tt == nil || tt.ExitCode != 0 {
		t.Errorf("init1 = %+v, want exited 0", p.Status.InitContainerStatuses[0].State)
	}
	if tt := p.Status.InitContainerStatuses[1].State.Terminated; tt == nil || tt.ExitCode != 1 {
		t.Errorf("init2 = %+v, want exited 1", p.Status.InitContainerStatuses[1].State)
	}
	if w := p.Status.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "PodInitializing" {
		t.Errorf("app container = %+v, want waiting with PodInitializing", p.Status.ContainerStatuses[0].State)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodInitialized && (c.Status != v1.ConditionFalse || c.Reason != "ContainersNotInitialized" || c.Message != "containers with incomplete status: [init2]") {
			t.Errorf("Initialized = %+v", c)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the app container ran")
	}
}

// TestActiveDeadlineFailsThePod: a pod past activeDeadlineSeconds is
// stopped and Failed with DeadlineExceeded, as the kubelet does (Jobs set
// it).
func TestActiveDeadlineFailsThePod(t *testing.T) {
	n := startNode(t, "node-deadline", Options{})
	deadline := int64(2)
	p := n.create(t, "deadline", "job", v1.RestartPolicyNever, "exec sleep 600", func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = &deadline })
	n.waitPod(t, p, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	p = n.waitPod(t, p, "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if p.Status.Reason != "DeadlineExceeded" || p.Status.Message != "Pod was active on the node longer than the specified deadline" {
		t.Errorf("reason %q message %q", p.Status.Reason, p.Status.Message)
	}
	if cs := containersOf(t, n.rt, p); len(cs) != 1 || cs[0].State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("containers after the deadline: %v; want the one exited", cs)
	}
	n.waitEvent(t, p, "DeadlineExceeded", "Pod was active on the node longer than the specified deadline")
}
