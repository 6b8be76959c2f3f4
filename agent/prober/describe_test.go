package prober

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kite-project/kite"
)

// podRecorder gives the prober client-go's event recorder, the way the
// kubelet writes its events (the agent has its own writer; this test
// needs only one that really writes Events).
type podRecorder struct{ r record.EventRecorder }

func (p podRecorder) Eventf(pod *v1.Pod, eventtype, reason, messageFmt string, args ...any) {
	p.r.Eventf(pod, eventtype, reason, messageFmt, args...)
}

// TestDescribePodShowsProbeEvents runs probes of a pod that exists in a
// real Kite, with events written to it, and reads `kubectl describe pod`:
// the Unhealthy events carry upstream's messages, and the Killing event
// the pod worker records with KillMessage reads as the kubelet's.
// Needs /usr/bin/kubectl.
func TestDescribePodShowsProbeEvents(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("needs kubectl:", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	srv, err := kite.Start(ctx, kite.Options{EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	defer broadcaster.Shutdown()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	rec := podRecorder{broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "kubelet", Host: "node-a"})}

	ready := newFlipServer(t)
	ready.fail.Store(true)
	pod, err := cs.CoreV1().Pods("default").Create(ctx, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1.PodSpec{NodeName: "node-a", Containers: []v1.Container{{
			Name:           "app",
			Image:          "busybox",
			ReadinessProbe: ready.probe(1, 3),
			LivenessProbe: &v1.Probe{
				ProbeHandler:  v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "echo cannot reach the database; exit 1"}}},
				PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 2,
			},
		}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	m, err := New(ctx, Options{Execer: hostExecer{containerID: "1-app"}, Recorder: rec, HostIP: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Wait()
	defer cancel()
	ups := &updates{m: m}
	m.UpdatePod(pod, runningStatus("1", "app"))
	ups.next(t, Liveness, 5*time.Second) // the initial Success
	u := ups.next(t, Liveness, 10*time.Second)
	if u.Result != Failure {
		t.Fatalf("liveness update = %+v, want Failure", u)
	}
	// What the pod worker does with a liveness failure.
	rec.Eventf(pod, v1.EventTypeNormal, ReasonKilling, "%s", KillMessage(u.Container, u.Type, true))

	want := []string{
		"Readiness probe failed: HTTP probe failed with statuscode: 500",
		"Liveness probe failed: cannot reach the database",
		"Container app failed liveness probe, will be restarted",
	}
	var out string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		b, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", srv.KubeconfigPath(), "describe", "pod", "web", "-n", "default").CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl describe: %v\n%s", err, b)
		}
		out = string(b)
		if containsAll(out, want) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	i := strings.Index(out, "Events:")
	if i < 0 {
		t.Fatalf("kubectl describe pod has no Events section:\n%s", out)
	}
	events := out[i:]
	t.Logf("kubectl describe pod web:\n%s", events)
	for _, w := range want {
		if !strings.Contains(events, w) {
			t.Errorf("kubectl describe pod has no event %q:\n%s", w, events)
		}
	}
	for _, line := range strings.Split(events, "\n") {
		switch {
		case strings.Contains(line, "probe failed"):
			if !strings.HasPrefix(strings.TrimSpace(line), "Warning  Unhealthy") || !strings.Contains(line, "kubelet") {
				t.Errorf("probe failure line %q, want a Warning Unhealthy event from kubelet", line)
			}
		case strings.Contains(line, "failed liveness probe"):
			if !strings.HasPrefix(strings.TrimSpace(line), "Normal   Killing") {
				t.Errorf("kill line %q, want a Normal Killing event", line)
			}
		}
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
