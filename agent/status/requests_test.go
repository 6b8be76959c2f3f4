package status

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/agent/kubetypes"
)

// counted counts the pod requests a client makes, by verb.
type counted struct{ gets, patches atomic.Int32 }

// runCounted starts a Manager with opts over a client whose requests are
// counted; opts.Client is filled in.
func runCounted(t *testing.T, opts Options) (*Manager, kubernetes.Interface, *counted) {
	t.Helper()
	c := &counted{}
	cfg := shared.RESTConfig()
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			switch r.Method {
			case http.MethodGet:
				c.gets.Add(1)
			case http.MethodPatch:
				c.patches.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	opts.Client = kubernetes.NewForConfigOrDie(cfg).CoreV1()
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { m.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return m, kubernetes.NewForConfigOrDie(shared.RESTConfig()), c
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func waiting(reason string) v1.PodStatus {
	return v1.PodStatus{Phase: v1.PodPending, HostIP: "10.0.0.1",
		ContainerStatuses: []v1.ContainerStatus{{Name: "c", Image: "img", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason}}}}}
}

// TestPatchesFromTheKnownPodWithoutReading: a pod the manager was given
// (as the agent's watch delivers it) is patched without a GET, and the
// next patch is made against the answer to the first, so that a state
// replaced is replaced in the API (not merged with the old one).
func TestPatchesFromTheKnownPodWithoutReading(t *testing.T) {
	m, cs, c := runCounted(t, Options{SyncPeriod: time.Minute})
	p := createPod(t, cs, "st-noget", "web", nil)
	m.SetPodStatus(p, waiting("CrashLoopBackOff"))
	eventually(t, "the waiting status", func() bool {
		s := get(t, cs, p).Status
		return len(s.ContainerStatuses) == 1 && s.ContainerStatuses[0].State.Waiting != nil
	})
	m.SetPodStatus(p, running(time.Now().Truncate(time.Second)))
	eventually(t, "Running", func() bool { return get(t, cs, p).Status.Phase == v1.PodRunning })
	if st := get(t, cs, p).Status.ContainerStatuses[0].State; st.Waiting != nil || st.Running == nil {
		t.Errorf("container state in the API = %+v, want running only", st)
	}
	if g, n := c.gets.Load(), c.patches.Load(); g != 0 || n != 2 {
		t.Errorf("the manager made %d GETs and %d PATCHes, want 0 and 2", g, n)
	}
}

// TestFirstStatusHeldWhileContainersAreCreated: a pod that starts within
// FirstWriteDelay is written once, Running; one whose containers are still
// being created when it ends is written Pending then.
func TestFirstStatusHeldWhileContainersAreCreated(t *testing.T) {
	const hold = 1500 * time.Millisecond
	m, cs, c := runCounted(t, Options{SyncPeriod: time.Minute, FirstWriteDelay: hold})
	fast := createPod(t, cs, "st-hold", "fast", nil)
	slow := createPod(t, cs, "st-hold", "slow", nil)
	start := time.Now()
	m.SetPodStatus(fast, waiting("ContainerCreating"))
	m.SetPodStatus(slow, waiting("ContainerCreating"))
	time.Sleep(100 * time.Millisecond)
	m.SetPodStatus(fast, running(time.Now().Truncate(time.Second)))
	eventually(t, "fast Running", func() bool { return get(t, cs, fast).Status.Phase == v1.PodRunning })
	if d := time.Since(start); d > hold {
		t.Errorf("a Running status waited %v, beyond the hold of the creating one", d)
	}
	if len(get(t, cs, slow).Status.ContainerStatuses) != 0 {
		t.Fatal("the creating status was written before its hold ended")
	}
	eventually(t, "slow ContainerCreating", func() bool {
		s := get(t, cs, slow).Status
		return len(s.ContainerStatuses) == 1 && s.ContainerStatuses[0].State.Waiting != nil
	})
	if d := time.Since(start); d < hold {
		t.Errorf("the creating status was written after %v, within its hold of %v", d, hold)
	}
	if n := c.patches.Load(); n != 2 {
		t.Errorf("%d PATCHes, want 2 (fast once, Running; slow once)", n)
	}
}

// TestStaticPodWrittenWhenItsMirrorIsObserved: a static pod's status
// waits for its mirror pod without reading the API, and is written as
// soon as the agent's watch shows the mirror.
func TestStaticPodWrittenWhenItsMirrorIsObserved(t *testing.T) {
	m, cs, c := runCounted(t, Options{SyncPeriod: time.Minute})
	static := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "seen-n1", Namespace: "st-seen", UID: "hash3",
		Annotations: map[string]string{kubetypes.ConfigSourceAnnotationKey: "file", kubetypes.ConfigHashAnnotationKey: "hash3"}}}
	m.SetPodStatus(static, running(time.Now().Truncate(time.Second)))
	time.Sleep(300 * time.Millisecond)
	mirror := createPod(t, cs, "st-seen", "seen-n1", func(p *v1.Pod) {
		p.Annotations = map[string]string{kubetypes.ConfigMirrorAnnotationKey: "hash3", kubetypes.ConfigSourceAnnotationKey: "file", kubetypes.ConfigHashAnnotationKey: "hash3"}
	})
	m.ObserveMirror(mirror)
	eventually(t, "the mirror Running", func() bool { return get(t, cs, mirror).Status.Phase == v1.PodRunning })
	if g := c.gets.Load(); g != 0 {
		t.Errorf("the manager made %d GETs, want 0", g)
	}
}

// TestRecreatedMirrorGetsTheStatusAtOnce: a mirror pod deleted and
// created again (kubectl delete pod on a mirror; the agent recreates it)
// is a new pod with no status: it gets the static pod's whole status as
// soon as the agent's watch shows it, though the status did not change,
// rather than never (the retry period is a minute here: no retry helps).
func TestRecreatedMirrorGetsTheStatusAtOnce(t *testing.T) {
	m, cs, _ := runCounted(t, Options{SyncPeriod: time.Minute})
	static := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "again-n1", Namespace: "st-again", UID: "hash4",
		Annotations: map[string]string{kubetypes.ConfigSourceAnnotationKey: "file", kubetypes.ConfigHashAnnotationKey: "hash4"}}}
	mirrorOf := func(p *v1.Pod) {
		p.Annotations = map[string]string{kubetypes.ConfigMirrorAnnotationKey: "hash4", kubetypes.ConfigSourceAnnotationKey: "file", kubetypes.ConfigHashAnnotationKey: "hash4"}
	}
	first := createPod(t, cs, "st-again", "again-n1", mirrorOf)
	m.ObserveMirror(first)
	m.SetPodStatus(static, running(time.Now().Truncate(time.Second)))
	eventually(t, "the first mirror Running", func() bool { return get(t, cs, first).Status.Phase == v1.PodRunning })

	if err := cs.CoreV1().Pods(first.Namespace).Delete(context.Background(), first.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	second := createPod(t, cs, "st-again", "again-n1", mirrorOf)
	if second.UID == first.UID || second.Status.Phase == v1.PodRunning {
		t.Fatalf("the recreated mirror is %s in phase %s; want a new pod", second.UID, second.Status.Phase)
	}
	m.ObserveMirror(second)
	eventually(t, "the recreated mirror Running with its container", func() bool {
		st := get(t, cs, second).Status
		return st.Phase == v1.PodRunning && len(st.ContainerStatuses) == 1 && st.ContainerStatuses[0].Ready
	})
}

func TestStarting(t *testing.T) {
	cases := []struct {
		name   string
		status v1.PodStatus
		want   bool
	}{
		{"no status yet", v1.PodStatus{}, true},
		{"ContainerCreating", waiting("ContainerCreating"), true},
		{"PodInitializing", waiting("PodInitializing"), true},
		{"a config error", waiting("CreateContainerConfigError"), false},
		{"Running", running(time.Now()), false},
		{"Failed", v1.PodStatus{Phase: v1.PodFailed}, false},
	}
	for _, c := range cases {
		if got := starting(c.status); got != c.want {
			t.Errorf("%s: starting = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestNewer(t *testing.T) {
	pod := func(rv string) *v1.Pod { return &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}} }
	a, b := pod("10"), pod("9")
	cases := []struct {
		name      string
		base, pod *v1.Pod
		want      *v1.Pod
	}{
		{"no base", nil, a, a},
		{"newer pod", b, a, a},
		{"older pod", a, b, a},
		{"pod without a number", a, pod(""), nil},
		{"base without a number", pod("x"), a, nil},
	}
	for _, c := range cases {
		if got := newer(c.base, c.pod); got != c.want {
			t.Errorf("%s: newer = %v, want %v", c.name, got, c.want)
		}
	}
}
