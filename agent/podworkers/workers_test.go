package podworkers

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kite-project/kite/agent/kubetypes"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a Syncer that records each call ("sync p v2", "terminating
// p 30", "terminated p") and can hold a sync until released.
type recorder struct {
	mu    sync.Mutex
	calls []string
	hold  chan struct{} // when set, SyncPod waits on it (or ctx)
	// holdRuntime, when set, holds SyncTerminatingRuntimePod.
	holdRuntime chan struct{}
	terminal    map[string]bool
	running     map[string]int // full names with a started, unfinished pod
	overlap     bool           // two pods of one full name ran together
	// statusDue is the StatusDue a pod's first sync returns, failed
	// when failDue.
	statusDue map[string]time.Duration
	failDue   bool
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.calls = append(r.calls, s)
	r.mu.Unlock()
}

func (r *recorder) SyncPod(ctx context.Context, pod *v1.Pod) (SyncResult, error) {
	r.mu.Lock()
	hold := r.hold
	name := kubetypes.PodFullName(pod)
	if r.running == nil {
		r.running = map[string]int{}
	}
	if r.running[name+string(pod.UID)] == 0 {
		r.running[name+string(pod.UID)] = 1
		r.running[name]++
		if r.running[name] > 1 {
			r.overlap = true
		}
	}
	r.mu.Unlock()
	r.add(fmt.Sprintf("sync %s %s", pod.Name, pod.ResourceVersion))
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			r.add("cancelled " + pod.Name)
			return SyncResult{}, ctx.Err()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if d, ok := r.statusDue[pod.Name]; ok {
		delete(r.statusDue, pod.Name)
		if r.failDue {
			return SyncResult{StatusDue: d}, fmt.Errorf("sync %s failed", pod.Name)
		}
		return SyncResult{StatusDue: d}, nil
	}
	return SyncResult{Terminal: r.terminal[pod.Name]}, nil
}

func (r *recorder) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, grace int64) error {
	r.add(fmt.Sprintf("terminating %s %d", pod.Name, grace))
	return nil
}

func (r *recorder) SyncTerminatedPod(ctx context.Context, pod *v1.Pod) error {
	r.add("terminated " + pod.Name)
	r.mu.Lock()
	name := kubetypes.PodFullName(pod)
	if r.running[name+string(pod.UID)] == 1 {
		r.running[name]--
		r.running[name+string(pod.UID)] = 2
	}
	r.mu.Unlock()
	return nil
}

func (r *recorder) SyncTerminatingRuntimePod(ctx context.Context, pod *v1.Pod) error {
	r.mu.Lock()
	hold := r.holdRuntime
	r.mu.Unlock()
	r.add("removing runtime " + string(pod.UID))
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r.add("removed runtime " + string(pod.UID))
	return nil
}

func (r *recorder) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

func (r *recorder) waitFor(t *testing.T, call string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, c := range r.snapshot() {
			if c == call {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no call %q; calls: %q", call, r.snapshot())
}

func start(t *testing.T, r *recorder) *Workers {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := New(ctx, Options{Syncer: r, ResyncInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); w.Wait() })
	return w
}

func pod(name, uid, rv string) *v1.Pod {
	grace := int64(30)
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(uid), ResourceVersion: rv},
		Spec: v1.PodSpec{TerminationGracePeriodSeconds: &grace}}
}

func count(calls []string, prefix string) int {
	n := 0
	for _, c := range calls {
		if len(c) >= len(prefix) && c[:len(prefix)] == prefix {
			n++
		}
	}
	return n
}

// TestLatestUpdateWins: updates that arrive during a sync collapse into
// one sync of the newest.
func TestLatestUpdateWins(t *testing.T) {
	hold := make(chan struct{})
	r := &recorder{hold: hold}
	w := start(t, r)
	w.UpdatePod(Update{Type: Create, Pod: pod("p", "u1", "1")})
	r.waitFor(t, "sync p 1")
	for _, rv := range []string{"2", "3", "4"} {
		w.UpdatePod(Update{Type: Modify, Pod: pod("p", "u1", rv)})
	}
	close(hold)
	r.waitFor(t, "sync p 4")
	time.Sleep(50 * time.Millisecond)
	if calls := r.snapshot(); count(calls, "sync p 2") != 0 || count(calls, "sync p 3") != 0 || count(calls, "sync p 4") != 1 {
		t.Errorf("calls = %q; want only the newest update synced, once", calls)
	}
}

// TestTerminationIsFinal: once killed, a UID terminates, finishes, and no
// later update runs it again; housekeeping keeps a finished UID that is
// still desired (a pod that ended and is still in the API) and forgets it
// once no source has it, after which the UID may start anew.
func TestTerminationIsFinal(t *testing.T) {
	r := &recorder{}
	w := start(t, r)
	p := pod("p", "u1", "1")
	w.UpdatePod(Update{Type: Create, Pod: p})
	r.waitFor(t, "sync p 1")
	w.UpdatePod(Update{Type: Kill, Pod: p})
	r.waitFor(t, "terminated p")
	w.UpdatePod(Update{Type: Modify, Pod: pod("p", "u1", "3")})
	w.UpdatePod(Update{Type: Sync, Pod: pod("p", "u1", "4")})
	time.Sleep(50 * time.Millisecond)
	calls := r.snapshot()
	if count(calls, "sync p 3")+count(calls, "sync p 4") != 0 || count(calls, "terminating") != 1 {
		t.Errorf("calls = %q; a finished UID ran again", calls)
	}
	if st := w.PodStatus("u1"); !st.Finished || st.RestartRequested {
		t.Errorf("status = %+v, want finished, no restart requested", st)
	}
	if got := w.SyncKnownPods(map[types.UID]bool{"u1": true}); len(got) != 0 {
		t.Errorf("forgotten = %v; a finished pod that is still desired was forgotten", got)
	}
	// Forgotten once no source has it; only then may the UID start anew.
	if got := w.SyncKnownPods(map[types.UID]bool{}); len(got) != 1 {
		t.Errorf("forgotten = %v, want [u1]", got)
	}
	w.UpdatePod(Update{Type: Create, Pod: pod("p", "u1", "5")})
	r.waitFor(t, "sync p 5")
}

// TestCreateOfEndingUIDRestartsIt: a create of a UID whose worker is
// terminating or finished (a static pod's manifest moved out and back: a
// REMOVE, then an ADD of the same UID) is remembered as a restart
// request; housekeeping forgets the finished worker although the UID is
// desired, and the pod created again runs, after the old life ended.
func TestCreateOfEndingUIDRestartsIt(t *testing.T) {
	for _, during := range []string{"terminating", "finished"} {
		t.Run(during, func(t *testing.T) {
			r := &recorder{}
			w := start(t, r)
			p := pod("p", "u1", "1")
			p.Annotations = map[string]string{kubetypes.ConfigSourceAnnotationKey: kubetypes.FileSource}
			w.UpdatePod(Update{Type: Create, Pod: p})
			r.waitFor(t, "sync p 1")
			w.UpdatePod(Update{Type: Kill, Pod: p})
			back := p.DeepCopy()
			back.ResourceVersion = "2"
			if during == "finished" {
				r.waitFor(t, "terminated p")
				time.Sleep(20 * time.Millisecond)
			}
			w.UpdatePod(Update{Type: Create, Pod: back})
			r.waitFor(t, "terminated p")
			time.Sleep(20 * time.Millisecond)
			if st := w.PodStatus("u1"); !st.Finished || !st.RestartRequested {
				t.Fatalf("status = %+v, want finished with a restart requested", st)
			}
			if got := w.SyncKnownPods(map[types.UID]bool{"u1": true}); len(got) != 1 {
				t.Fatalf("forgotten = %v, want [u1]: the finished life of a UID created again must be purged", got)
			}
			w.UpdatePod(Update{Type: Create, Pod: back})
			r.waitFor(t, "sync p 2")
			calls := r.snapshot()
			if i, j := index(calls, "terminated p"), index(calls, "sync p 2"); i < 0 || i > j {
				t.Errorf("calls = %q; want the old life terminated before the new one syncs", calls)
			}
		})
	}
}

// TestOrphanKillHoldsItsUID: an orphan runtime pod is killed by a worker
// of its UID; a pod created with that UID meanwhile waits until the
// removal finished and housekeeping purged it, so the removal never
// reaches the new pod's sandbox or volumes.
func TestOrphanKillHoldsItsUID(t *testing.T) {
	r := &recorder{holdRuntime: make(chan struct{})}
	w := start(t, r)
	one := int64(1)
	w.UpdatePod(Update{Type: Kill, Pod: pod("old", "u1", ""), RuntimeOnly: true, GracePeriod: &one})
	r.waitFor(t, "removing runtime u1")
	w.UpdatePod(Update{Type: Create, Pod: pod("p", "u1", "1")})
	// Housekeeping while the removal runs keeps the worker.
	if got := w.SyncKnownPods(map[types.UID]bool{"u1": true}); len(got) != 0 {
		t.Fatalf("forgotten = %v while the runtime pod is being removed", got)
	}
	time.Sleep(50 * time.Millisecond)
	if c := r.snapshot(); count(c, "sync p") != 0 {
		t.Fatalf("calls = %q; the new pod ran while the old runtime pod of its UID was being removed", c)
	}
	close(r.holdRuntime)
	r.waitFor(t, "removed runtime u1")
	deadline := time.Now().Add(10 * time.Second)
	for !w.PodStatus("u1").Finished {
		if time.Now().After(deadline) {
			t.Fatal("the runtime pod's worker never finished")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := w.SyncKnownPods(map[types.UID]bool{"u1": true}); len(got) != 1 {
		t.Fatalf("forgotten = %v, want [u1]", got)
	}
	w.UpdatePod(Update{Type: Create, Pod: pod("p", "u1", "1")})
	r.waitFor(t, "sync p 1")
	if c := r.snapshot(); count(c, "terminating") != 0 || count(c, "terminated") != 0 {
		t.Errorf("calls = %q; a runtime pod's worker ran the pod's termination", c)
	}
	// A runtime-only kill of a UID whose worker has the pod is dropped.
	w.UpdatePod(Update{Type: Kill, Pod: pod("old", "u1", ""), RuntimeOnly: true, GracePeriod: &one})
	time.Sleep(50 * time.Millisecond)
	if c := r.snapshot(); count(c, "removing runtime") != 1 || count(c, "terminating") != 0 {
		t.Errorf("calls = %q; a runtime-only kill reached a pod's worker", c)
	}
}

// TestTerminationCancelsSync: a kill during a sync cancels it, and the
// termination runs next.
func TestTerminationCancelsSync(t *testing.T) {
	r := &recorder{hold: make(chan struct{})}
	w := start(t, r)
	p := pod("p", "u1", "1")
	w.UpdatePod(Update{Type: Create, Pod: p})
	r.waitFor(t, "sync p 1")
	w.UpdatePod(Update{Type: Kill, Pod: p})
	r.waitFor(t, "cancelled p")
	r.waitFor(t, "terminating p 30")
	r.waitFor(t, "terminated p")
}

func TestTerminalPhaseTerminates(t *testing.T) {
	r := &recorder{terminal: map[string]bool{"p": true}}
	w := start(t, r)
	w.UpdatePod(Update{Type: Create, Pod: pod("p", "u1", "1")})
	r.waitFor(t, "terminating p 30")
	r.waitFor(t, "terminated p")
}

func TestGracePeriod(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	cases := []struct {
		name     string
		latched  int64
		spec     *int64
		deletion *int64
		override *int64
		want     int64
	}{
		{"spec", 0, i(30), nil, nil, 30},
		{"no spec: the API default", 0, nil, nil, nil, 30},
		{"deletion grace", 0, i(30), i(5), nil, 5},
		{"override smaller", 0, i(30), i(5), i(2), 2},
		{"override larger does not raise", 0, i(30), i(5), i(20), 5},
		{"latched only shrinks", 5, i(30), i(10), nil, 5},
		{"force delete (0) gives 1", 0, i(30), i(0), nil, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1.Pod{Spec: v1.PodSpec{TerminationGracePeriodSeconds: tc.spec}}
			p.DeletionGracePeriodSeconds = tc.deletion
			if got := effectiveGrace(tc.latched, p, tc.override); got != tc.want {
				t.Errorf("grace = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestDeletionUsesDeletionGrace: an update with a deletionTimestamp
// terminates with the deletion grace.
func TestDeletionUsesDeletionGrace(t *testing.T) {
	r := &recorder{}
	w := start(t, r)
	p := pod("p", "u1", "1")
	w.UpdatePod(Update{Type: Create, Pod: p})
	r.waitFor(t, "sync p 1")
	d := pod("p", "u1", "2")
	now := metav1.Now()
	g := int64(7)
	d.DeletionTimestamp, d.DeletionGracePeriodSeconds = &now, &g
	w.UpdatePod(Update{Type: Modify, Pod: d})
	r.waitFor(t, "terminating p 7")
}

// TestStaticPodsOfOneNameNeverOverlap: an edited static pod (new UID, same
// full name) starts only after the old one finished.
func TestStaticPodsOfOneNameNeverOverlap(t *testing.T) {
	r := &recorder{}
	w := start(t, r)
	static := func(uid, rv string) *v1.Pod {
		p := pod("etcd", uid, rv)
		p.Annotations = map[string]string{kubetypes.ConfigSourceAnnotationKey: kubetypes.FileSource}
		return p
	}
	old, edited := static("a", "1"), static("b", "2")
	w.UpdatePod(Update{Type: Create, Pod: old})
	r.waitFor(t, "sync etcd 1")
	// The merge sends the new UID's ADD before or after the old one's
	// REMOVE; here it comes first.
	w.UpdatePod(Update{Type: Create, Pod: edited})
	time.Sleep(50 * time.Millisecond)
	if count(r.snapshot(), "sync etcd 2") != 0 {
		t.Fatalf("the successor started while its predecessor runs: %q", r.snapshot())
	}
	w.UpdatePod(Update{Type: Kill, Pod: old})
	r.waitFor(t, "sync etcd 2")
	calls := r.snapshot()
	if i, j := index(calls, "terminated etcd"), index(calls, "sync etcd 2"); i < 0 || i > j {
		t.Errorf("calls = %q; want the old pod terminated before the new one syncs", calls)
	}
	if r.overlap {
		t.Error("two pods of one full name ran at once")
	}
}

func index(calls []string, c string) int {
	for i, x := range calls {
		if x == c {
			return i
		}
	}
	return -1
}

// TestFirstSeenTerminalPodIsNotStarted: after an agent restart a pod the
// API shows Failed only gets its termination, never a sync.
func TestFirstSeenTerminalPodIsNotStarted(t *testing.T) {
	r := &recorder{}
	w := start(t, r)
	p := pod("p", "u1", "1")
	p.Status.Phase = v1.PodFailed
	w.UpdatePod(Update{Type: Create, Pod: p})
	r.waitFor(t, "terminated p")
	if count(r.snapshot(), "sync") != 0 {
		t.Errorf("calls = %q; a terminal pod was synced", r.snapshot())
	}
}

// TestStatusDueSyncsAgain: a sync whose status changes by the clock alone
// (a held stdin-once start) is followed by one at that moment, with no
// update, long before the resync interval (an hour here) or the back-off
// after a failed sync (10 s), and not before it.
func TestStatusDueSyncsAgain(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("failed=%v", fail), func(t *testing.T) {
			const due = 300 * time.Millisecond
			r := &recorder{statusDue: map[string]time.Duration{"p": due}, failDue: fail}
			w := start(t, r)
			begin := time.Now()
			w.UpdatePod(Update{Type: Create, Pod: pod("p", "u1", "1")})
			deadline := time.Now().Add(5 * time.Second)
			for count(r.snapshot(), "sync p 1") < 2 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			took := time.Since(begin)
			if n := count(r.snapshot(), "sync p 1"); n < 2 || took < due {
				t.Errorf("%d syncs after %v; want a second at %v, with no update", n, took, due)
			}
		})
	}
}
