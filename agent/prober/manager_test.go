package prober

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kite-project/kite/agent/runtime"
)

// events is an EventRecorder that keeps what it is given.
type events struct {
	mu   sync.Mutex
	list []string // "type reason message"
}

func (e *events) Eventf(pod *v1.Pod, eventtype, reason, messageFmt string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, eventtype+" "+reason+" "+fmt.Sprintf(messageFmt, args...))
}

// count is how many events so far start with prefix.
func (e *events) count(prefix string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, s := range e.list {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

// containerEvents is an events that also takes the container's name, as
// the agent's recorder does for field paths.
type containerEvents struct{ events }

func (e *containerEvents) ContainerEventf(pod *v1.Pod, container, eventtype, reason, messageFmt string, args ...any) {
	e.Eventf(pod, eventtype, reason, "["+container+"] "+messageFmt, args...)
}

func newManager(t *testing.T, ctx context.Context, execer Execer) (*Manager, *events) {
	t.Helper()
	rec := &events{}
	return newManagerWith(t, ctx, execer, rec), rec
}

func newManagerWith(t *testing.T, ctx context.Context, execer Execer, rec EventRecorder) *Manager {
	t.Helper()
	m, err := New(ctx, Options{Execer: execer, Recorder: rec, HostIP: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func testPod(containers ...v1.Container) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: types.UID("uid-" + containers[0].Name)},
		Spec:       v1.PodSpec{Containers: containers, RestartPolicy: v1.RestartPolicyAlways},
	}
}

// runningStatus says that each named container runs as instance id.
func runningStatus(id string, names ...string) v1.PodStatus {
	st := v1.PodStatus{Phase: v1.PodRunning}
	for _, n := range names {
		st.ContainerStatuses = append(st.ContainerStatuses, v1.ContainerStatus{
			Name:        n,
			ContainerID: "process://" + id + "-" + n,
			State:       v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.Now()}},
		})
	}
	return st
}

// updates reads a Manager's Updates and keeps those a test has not
// asked for yet, so that waiting for one probe type loses no other.
type updates struct {
	m       *Manager
	pending []Update
}

// next waits for the next update of probe type typ.
func (u *updates) next(t *testing.T, typ Type, within time.Duration) Update {
	t.Helper()
	for i, p := range u.pending {
		if p.Type == typ {
			u.pending = append(u.pending[:i], u.pending[i+1:]...)
			return p
		}
	}
	deadline := time.After(within)
	for {
		select {
		case up := <-u.m.Updates():
			if up.Type == typ {
				return up
			}
			u.pending = append(u.pending, up)
		case <-deadline:
			t.Fatalf("no %v update within %v", typ, within)
		}
	}
}

// flipServer answers 200 or 500 as told and counts what it answered.
type flipServer struct {
	fail     atomic.Bool
	ok, bad  atomic.Int32
	port     int
	requests atomic.Int32
}

func newFlipServer(t *testing.T) *flipServer {
	f := &flipServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		f.requests.Add(1)
		if f.fail.Load() {
			f.bad.Add(1)
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		f.ok.Add(1)
	}))
	t.Cleanup(srv.Close)
	f.port = srv.Listener.Addr().(*net.TCPAddr).Port
	return f
}

func (f *flipServer) probe(success, failure int32) *v1.Probe {
	return &v1.Probe{
		ProbeHandler:     v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(int32(f.port))}},
		PeriodSeconds:    1,
		TimeoutSeconds:   1,
		SuccessThreshold: success,
		FailureThreshold: failure,
	}
}

func TestReadinessFlipsAtTheThresholds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	rec := &containerEvents{}
	m := newManagerWith(t, ctx, nil, rec)
	defer func() { cancel(); m.Wait() }()
	ups := &updates{m: m}
	srv := newFlipServer(t)
	srv.fail.Store(true)

	pod := testPod(v1.Container{Name: "app", ReadinessProbe: srv.probe(2, 2)})
	m.UpdatePod(pod, runningStatus("1", "app"))

	// A new container is not ready until proven ready.
	if u := ups.next(t, Readiness, 5*time.Second); u.Result != Failure || u.ContainerID != "1-app" || u.Container != "app" || u.PodUID != pod.UID {
		t.Fatalf("first update = %+v, want the initial Failure for 1-app", u)
	}
	if m.Readiness(pod.UID, "app") {
		t.Fatal("ready before any success")
	}

	srv.fail.Store(false)
	u := ups.next(t, Readiness, 10*time.Second)
	if u.Result != Success {
		t.Fatalf("update = %+v, want Success", u)
	}
	if n := srv.ok.Load(); n < 2 {
		t.Errorf("ready after %d successful checks, want the success threshold 2", n)
	}
	if !m.Readiness(pod.UID, "app") || !m.Results().Ready("process://1-app") {
		t.Error("Readiness is false after the Success update")
	}

	srv.fail.Store(true)
	badBefore := srv.bad.Load()
	u = ups.next(t, Readiness, 10*time.Second)
	if u.Result != Failure {
		t.Fatalf("update = %+v, want Failure", u)
	}
	if n := srv.bad.Load() - badBefore; n < 2 {
		t.Errorf("unready after %d failed checks, want the failure threshold 2", n)
	}
	if m.Readiness(pod.UID, "app") {
		t.Error("Readiness is true after the Failure update")
	}
	if m.Results().Ready("1-app") {
		t.Error("Results().Ready is true after the Failure update")
	}
	if rec.count("Warning Unhealthy [app] Readiness probe failed: HTTP probe failed with statuscode: 500") < 2 {
		t.Errorf("events = %q, want Unhealthy readiness failures with upstream's message", rec.list)
	}
}

func TestReadinessWithoutProbeIsReadyWhileRunning(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	m, _ := newManager(t, ctx, nil)
	defer func() { cancel(); m.Wait() }()

	pod := testPod(v1.Container{Name: "plain"})
	if m.Readiness(pod.UID, "plain") || m.Started(pod.UID, "plain") {
		t.Fatal("a pod never given to UpdatePod is ready or started")
	}
	m.UpdatePod(pod, runningStatus("1", "plain"))
	if !m.Readiness(pod.UID, "plain") || !m.Started(pod.UID, "plain") {
		t.Error("a running container without probes is not ready and started at once")
	}
	exited := runningStatus("1", "plain")
	exited.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}
	m.UpdatePod(pod, exited)
	if m.Readiness(pod.UID, "plain") {
		t.Error("an exited container is ready")
	}
}

func TestStartupGatesLivenessAndReadiness(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	m, rec := newManager(t, ctx, hostExecer{containerID: "1-app"})
	defer func() { cancel(); m.Wait() }()
	ups := &updates{m: m}
	marker := filepath.Join(t.TempDir(), "started")
	live := newFlipServer(t)
	live.fail.Store(true)
	ready := newFlipServer(t)

	pod := testPod(v1.Container{
		Name: "app",
		StartupProbe: &v1.Probe{
			ProbeHandler:  v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"test", "-f", marker}}},
			PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 60,
		},
		LivenessProbe:  live.probe(1, 1),
		ReadinessProbe: ready.probe(1, 1),
	})
	m.UpdatePod(pod, runningStatus("1", "app"))

	if u := ups.next(t, Startup, 5*time.Second); u.Result != Unknown {
		t.Fatalf("first startup update = %+v, want the initial Unknown", u)
	}
	// Several startup checks fail while the other probes wait.
	deadline := time.Now().Add(10 * time.Second)
	for rec.count("Warning Unhealthy Startup probe failed: ") < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if rec.count("Warning Unhealthy Startup probe failed: ") < 2 {
		t.Fatalf("events = %q, want startup failures", rec.list)
	}
	if n := live.requests.Load() + ready.requests.Load(); n != 0 {
		t.Fatalf("liveness and readiness were checked %d times before the container started", n)
	}
	if m.Started(pod.UID, "app") || m.Readiness(pod.UID, "app") {
		t.Fatal("started or ready before the startup probe passed")
	}
	if ok, failed, known := m.Results().Startup("1-app"); ok || failed || known {
		t.Errorf("Results().Startup = %v, %v, %v before a verdict, want none known", ok, failed, known)
	}

	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if u := ups.next(t, Startup, 5*time.Second); u.Result != Success {
		t.Fatalf("startup update = %+v, want Success", u)
	}
	if !m.Started(pod.UID, "app") || !m.Results().Started("1-app") {
		t.Error("not started after the startup Success")
	}
	if ok, failed, known := m.Results().Startup("1-app"); !ok || failed || !known {
		t.Errorf("Results().Startup = %v, %v, %v after the Success, want a known success", ok, failed, known)
	}
	// Now liveness runs, and its failing server kills the container at
	// the first failure (threshold 1); readiness runs and passes.
	// Before the start they only published their initial results.
	for _, want := range []Update{
		{PodUID: pod.UID, Container: "app", ContainerID: "1-app", Type: Liveness, Result: Success},
		{PodUID: pod.UID, Container: "app", ContainerID: "1-app", Type: Liveness, Result: Failure},
		{PodUID: pod.UID, Container: "app", ContainerID: "1-app", Type: Readiness, Result: Failure},
		{PodUID: pod.UID, Container: "app", ContainerID: "1-app", Type: Readiness, Result: Success},
	} {
		if u := ups.next(t, want.Type, 5*time.Second); u != want {
			t.Fatalf("update = %+v, want %+v", u, want)
		}
	}
	if rec.count("Warning Unhealthy Liveness probe failed: HTTP probe failed with statuscode: 500") != 1 {
		t.Errorf("events = %q, want one liveness failure", rec.list)
	}
}

func TestLivenessFailureAfterFailureThreshold(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	m, rec := newManager(t, ctx, nil)
	defer func() { cancel(); m.Wait() }()
	ups := &updates{m: m}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	pod := testPod(v1.Container{Name: "db", LivenessProbe: &v1.Probe{
		ProbeHandler:  v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}},
		PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
	}})
	m.UpdatePod(pod, runningStatus("1", "db"))
	if u := ups.next(t, Liveness, 5*time.Second); u.Result != Success {
		t.Fatalf("first liveness update = %+v, want the initial Success", u)
	}

	l.Close()
	failed := "Warning Unhealthy Liveness probe failed: dial tcp 127.0.0.1:"
	u := ups.next(t, Liveness, 10*time.Second)
	if u.Result != Failure || u.ContainerID != "1-db" {
		t.Fatalf("update = %+v, want Failure of 1-db", u)
	}
	if n := rec.count(failed); n != 3 {
		t.Errorf("liveness failed after %d failed checks, want failureThreshold 3 (events %q)", n, rec.list)
	}
	if failed, known := m.Results().Liveness("1-db"); !failed || !known {
		t.Errorf("Results().Liveness = %v, %v, want a known failure", failed, known)
	}
	// On hold: the dying container is not checked again...
	time.Sleep(1500 * time.Millisecond)
	if n := rec.count(failed); n != 3 {
		t.Errorf("%d failed checks after the verdict, want none beyond the 3", n)
	}
	// ...until the pod worker has replaced it: a new instance starts
	// alive and is checked again.
	m.UpdatePod(pod, runningStatus("2", "db"))
	if u := ups.next(t, Liveness, 5*time.Second); u.Result != Success || u.ContainerID != "2-db" {
		t.Fatalf("update = %+v, want the initial Success of 2-db", u)
	}
	if _, known := m.Results().Liveness("1-db"); known {
		t.Error("the replaced instance still has a result")
	}
	deadline := time.Now().Add(5 * time.Second)
	for rec.count(failed) == 3 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if rec.count(failed) == 3 {
		t.Error("the new container was not checked")
	}
}

func TestWorkersStopOnRemovePodAndContextEnd(t *testing.T) {
	t.Parallel()
	srv := newFlipServer(t)
	pod := testPod(v1.Container{Name: "app", ReadinessProbe: srv.probe(1, 1), LivenessProbe: srv.probe(1, 3)})

	t.Run("RemovePod", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		m, _ := newManager(t, ctx, nil)
		ups := &updates{m: m}
		m.UpdatePod(pod, runningStatus("1", "app"))
		ups.next(t, Readiness, 5*time.Second)
		m.RemovePod(pod.UID)
		if m.Readiness(pod.UID, "app") {
			t.Error("a removed pod is ready")
		}
		waitReturns(t, m.Wait) // the context is still alive
	})
	t.Run("context end", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		m, _ := newManager(t, ctx, nil)
		ups := &updates{m: m}
		m.UpdatePod(pod, runningStatus("1", "app"))
		ups.next(t, Readiness, 5*time.Second)
		cancel()
		waitReturns(t, m.Wait)
		m.UpdatePod(testPod(v1.Container{Name: "late", ReadinessProbe: srv.probe(1, 1)}), runningStatus("1", "late"))
		waitReturns(t, m.Wait) // no worker started after the end
	})
}

func waitReturns(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("workers did not stop")
	}
}

func TestNewRequiresARecorder(t *testing.T) {
	if _, err := New(context.Background(), Options{}); err == nil {
		t.Error("New without a recorder succeeded")
	}
}

func TestKillMessage(t *testing.T) {
	cases := []struct {
		typ     Type
		restart bool
		want    string
	}{
		{Liveness, true, "Container app failed liveness probe, will be restarted"},
		{Liveness, false, "Container app failed liveness probe"},
		{Startup, true, "Container app failed startup probe, will be restarted"},
	}
	for _, tc := range cases {
		if got := KillMessage("app", tc.typ, tc.restart); got != tc.want {
			t.Errorf("KillMessage(%v, %v) = %q, want %q", tc.typ, tc.restart, got, tc.want)
		}
	}
}

// TestErroredChecksAreDiscarded: a check that cannot be made (here a
// command that does not exist) is tried three times per tick, recorded
// as an errored event, and never counts toward a threshold, as upstream.
func TestErroredChecksAreDiscarded(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	execer := &countingExecer{Execer: hostExecer{containerID: "1-app"}}
	m, rec := newManager(t, ctx, execer)
	defer func() { cancel(); m.Wait() }()
	ups := &updates{m: m}
	pod := testPod(v1.Container{Name: "app", LivenessProbe: &v1.Probe{
		ProbeHandler:  v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"/nonexistent/check"}}},
		PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1,
	}})
	m.UpdatePod(pod, runningStatus("1", "app"))
	if u := ups.next(t, Liveness, 5*time.Second); u.Result != Success {
		t.Fatalf("first update = %+v, want the initial Success", u)
	}
	errored := "Warning Unhealthy Liveness probe errored and resulted in unknown state: exec probe [\"/nonexistent/check\"] in container 1-app: "
	deadline := time.Now().Add(10 * time.Second)
	for rec.count(errored) < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if rec.count(errored) < 2 {
		t.Fatalf("events = %q, want errored events", rec.list)
	}
	// Each event follows three attempts; a tick may be under way.
	if n, calls := rec.count(errored), int(execer.calls.Load()); calls < 3*n || calls > 3*n+3 {
		t.Errorf("%d exec attempts for %d errored ticks, want 3 each", calls, n)
	}
	select {
	case u := <-m.Updates():
		t.Errorf("update %+v after errored checks, want none", u)
	default:
	}
	if failed, _ := m.Results().Liveness("1-app"); failed {
		t.Error("errored checks failed the liveness probe")
	}
}

// countingExecer counts the commands run through it.
type countingExecer struct {
	Execer
	calls atomic.Int32
}

func (c *countingExecer) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (runtime.ExecResult, error) {
	c.calls.Add(1)
	return c.Execer.ExecSync(ctx, id, cmd, timeout)
}

func TestKillGracePeriod(t *testing.T) {
	five, ten := int64(5), int64(10)
	withPod := &v1.Pod{Spec: v1.PodSpec{TerminationGracePeriodSeconds: &ten}}
	cases := []struct {
		name string
		pod  *v1.Pod
		c    v1.Container
		typ  Type
		want int64
	}{
		{"the probe's own", withPod, v1.Container{LivenessProbe: &v1.Probe{TerminationGracePeriodSeconds: &five}}, Liveness, 5},
		{"else the pod's", withPod, v1.Container{LivenessProbe: &v1.Probe{}}, Liveness, 10},
		{"else 30 s", &v1.Pod{}, v1.Container{StartupProbe: &v1.Probe{}}, Startup, 30},
		{"the failing probe's, not another's", withPod, v1.Container{LivenessProbe: &v1.Probe{TerminationGracePeriodSeconds: &five}, StartupProbe: &v1.Probe{}}, Startup, 10},
	}
	for _, tc := range cases {
		if got := KillGracePeriod(tc.pod, &tc.c, tc.typ); got != tc.want {
			t.Errorf("%s: KillGracePeriod = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestStartupFailureAtThreshold: a container that never starts fails its
// startup probe at failureThreshold, which the pod worker acts on as on a
// liveness failure; liveness is never checked meanwhile.
func TestStartupFailureAtThreshold(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	m, rec := newManager(t, ctx, hostExecer{containerID: "1-app"})
	defer func() { cancel(); m.Wait() }()
	ups := &updates{m: m}
	live := newFlipServer(t)
	pod := testPod(v1.Container{
		Name: "app",
		StartupProbe: &v1.Probe{
			ProbeHandler:  v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "echo still loading; exit 1"}}},
			PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 2,
		},
		LivenessProbe: live.probe(1, 1),
	})
	m.UpdatePod(pod, runningStatus("1", "app"))
	ups.next(t, Startup, 5*time.Second) // the initial Unknown
	if u := ups.next(t, Startup, 10*time.Second); u.Result != Failure {
		t.Fatalf("startup update = %+v, want Failure", u)
	}
	if n := rec.count("Warning Unhealthy Startup probe failed: still loading"); n != 2 {
		t.Errorf("startup failed after %d failed checks, want failureThreshold 2", n)
	}
	if ok, failed, known := m.Results().Startup("1-app"); ok || !failed || !known {
		t.Errorf("Results().Startup = %v, %v, %v, want a known failure", ok, failed, known)
	}
	if live.requests.Load() != 0 || m.Started(pod.UID, "app") {
		t.Error("liveness ran, or the container counts as started, after a failed startup")
	}
}
