package podstatus

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite/agent/podruntime"
)

var (
	t0  = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now = t0.Add(time.Hour)
)

func pod(policy v1.RestartPolicy, inits []string, names ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}, Spec: v1.PodSpec{RestartPolicy: policy}}
	for _, n := range inits {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: n, Image: "img"})
	}
	for _, n := range names {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: n, Image: "img"})
	}
	return p
}

func instance(name string, state podruntime.State, code int32, age int, restarts int) *podruntime.Container {
	return &podruntime.Container{ID: name + "-" + string(rune('0'+age)), Name: name, State: state, ExitCode: code, RestartCount: restarts,
		CreatedAt: t0.Add(time.Duration(age) * time.Minute), StartedAt: t0.Add(time.Duration(age) * time.Minute),
		FinishedAt: t0.Add(time.Duration(age)*time.Minute + 30*time.Second), Reason: map[bool]string{true: "Completed", false: "Error"}[code == 0]}
}

func rt(cs ...*podruntime.Container) *podruntime.Pod {
	p := &podruntime.Pod{UID: "u", Sandboxes: []podruntime.Sandbox{{ID: "sb", Ready: true}}}
	for i := len(cs) - 1; i >= 0; i-- {
		p.Containers = append(p.Containers, cs[i])
	}
	return p
}

func condition(s v1.PodStatus, t v1.PodConditionType) v1.PodCondition {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c
		}
	}
	return v1.PodCondition{}
}

func TestPhase(t *testing.T) {
	cases := []struct {
		name     string
		pod      *v1.Pod
		rt       *podruntime.Pod
		waiting  map[string]Waiting
		terminal bool
		want     v1.PodPhase
	}{
		{"nothing in the runtime yet: Pending", pod(v1.RestartPolicyAlways, nil, "a"), nil, nil, false, v1.PodPending},
		{"running: Running", pod(v1.RestartPolicyAlways, nil, "a"), rt(instance("a", podruntime.Running, 0, 1, 0)), nil, false, v1.PodRunning},
		{"one running, one not yet: Pending", pod(v1.RestartPolicyAlways, nil, "a", "b"), rt(instance("a", podruntime.Running, 0, 1, 0)), nil, false, v1.PodPending},
		{"Never, exit 3: Failed", pod(v1.RestartPolicyNever, nil, "a"), rt(instance("a", podruntime.Exited, 3, 1, 0)), nil, false, v1.PodFailed},
		{"Never, exit 0: Succeeded", pod(v1.RestartPolicyNever, nil, "a"), rt(instance("a", podruntime.Exited, 0, 1, 0)), nil, false, v1.PodSucceeded},
		{"OnFailure, exit 0: Succeeded", pod(v1.RestartPolicyOnFailure, nil, "a"), rt(instance("a", podruntime.Exited, 0, 1, 0)), nil, false, v1.PodSucceeded},
		{"OnFailure, exit 1, backing off: Running", pod(v1.RestartPolicyOnFailure, nil, "a"), rt(instance("a", podruntime.Exited, 1, 1, 0)),
			map[string]Waiting{"a": {Reason: ReasonCrashLoopBackOff}}, false, v1.PodRunning},
		{"Always, exited 0: Running (restarting)", pod(v1.RestartPolicyAlways, nil, "a"), rt(instance("a", podruntime.Exited, 0, 1, 0)), nil, false, v1.PodRunning},
		{"Always, stopped for good with exit 0: Succeeded", pod(v1.RestartPolicyAlways, nil, "a"), rt(instance("a", podruntime.Exited, 0, 1, 0)), nil, true, v1.PodSucceeded},
		{"Always, stopped for good with exit 143: Failed", pod(v1.RestartPolicyAlways, nil, "a"), rt(instance("a", podruntime.Exited, 143, 1, 0)), nil, true, v1.PodFailed},
		{"init container running: Pending", pod(v1.RestartPolicyAlways, []string{"i"}, "a"), rt(instance("i", podruntime.Running, 0, 1, 0)), nil, false, v1.PodPending},
		{"init container failed under Never: Failed", pod(v1.RestartPolicyNever, []string{"i"}, "a"), rt(instance("i", podruntime.Exited, 1, 1, 0)), nil, false, v1.PodFailed},
		{"init container failed under Always, backing off: Pending", pod(v1.RestartPolicyAlways, []string{"i"}, "a"), rt(instance("i", podruntime.Exited, 1, 1, 0)),
			map[string]Waiting{"i": {Reason: ReasonCrashLoopBackOff}}, false, v1.PodPending},
		{"config error before the first start: Pending", pod(v1.RestartPolicyAlways, nil, "a"), rt(),
			map[string]Waiting{"a": {Reason: ReasonCreateContainerConfigError, Message: "x"}}, false, v1.PodPending},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := Generate(Input{Pod: tc.pod, Runtime: tc.rt, Waiting: tc.waiting, Terminal: tc.terminal, Now: now})
			if s.Phase != tc.want {
				t.Errorf("phase = %s, want %s", s.Phase, tc.want)
			}
		})
	}
}

func TestTerminalPhaseIsFinal(t *testing.T) {
	p := pod(v1.RestartPolicyAlways, nil, "a")
	s := Generate(Input{Pod: p, Runtime: rt(instance("a", podruntime.Running, 0, 1, 0)), Old: v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted"}, Now: now})
	if s.Phase != v1.PodFailed || s.Reason != "Evicted" {
		t.Errorf("phase, reason = %s, %q; want Failed, Evicted kept", s.Phase, s.Reason)
	}
}

func TestContainerStatuses(t *testing.T) {
	p := pod(v1.RestartPolicyOnFailure, nil, "b", "a")
	r := rt(instance("a", podruntime.Exited, 1, 1, 0), instance("a", podruntime.Exited, 2, 2, 1), instance("b", podruntime.Running, 0, 3, 0))
	r.Containers[0].ImageRef = "sha256:abc"
	s := Generate(Input{Pod: p, Runtime: r, RuntimeName: "kite-process", HostIPs: []string{"10.0.0.5"}, Now: now,
		Waiting: map[string]Waiting{"a": {Reason: ReasonCrashLoopBackOff, Message: "back-off 20s restarting failed container=a pod=p_ns(u)"}}})
	yes, no := true, false
	want := []v1.ContainerStatus{
		{Name: "a", Image: "img", ImageID: "", ContainerID: "kite-process://a-2", RestartCount: 1, Started: &no,
			State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 20s restarting failed container=a pod=p_ns(u)"}},
			LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 2, Reason: "Error", ContainerID: "a-2",
				StartedAt: metav1.NewTime(t0.Add(2 * time.Minute)), FinishedAt: metav1.NewTime(t0.Add(2*time.Minute + 30*time.Second))}}},
		{Name: "b", Image: "img", ImageID: "sha256:abc", ContainerID: "kite-process://b-3", Ready: true, Started: &yes,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0.Add(3 * time.Minute))}}},
	}
	if d := cmp.Diff(want, s.ContainerStatuses); d != "" {
		t.Errorf("container statuses (-want +got):\n%s", d)
	}
	if s.PodIP != "10.0.0.5" || len(s.PodIPs) != 1 || s.HostIP != "10.0.0.5" || len(s.HostIPs) != 1 {
		t.Errorf("IPs: podIP %q podIPs %v hostIP %q hostIPs %v; want the host's", s.PodIP, s.PodIPs, s.HostIP, s.HostIPs)
	}
	if s.QOSClass != v1.PodQOSBestEffort || s.StartTime == nil || !s.StartTime.Time.Equal(now) {
		t.Errorf("qosClass %s startTime %v; want BestEffort, %v", s.QOSClass, s.StartTime, now)
	}
}

// TestDefaultWaitingReasonIsPodInitializingInPodsWithInitContainers: as
// upstream's convertToAPIContainerStatuses, a container not yet started
// waits with PodInitializing in a pod with init containers, whether it is
// an init container or an app container, and with ContainerCreating in a
// pod without any (the conformance test "should not start app containers if
// init containers fail on a RestartAlways pod" checks init2's reason).
func TestDefaultWaitingReasonIsPodInitializingInPodsWithInitContainers(t *testing.T) {
	cases := []struct {
		name    string
		pod     *v1.Pod
		rt      *podruntime.Pod
		waiting map[string]Waiting
		want    map[string]string // container -> waiting reason
	}{
		{"no init containers: ContainerCreating", pod(v1.RestartPolicyAlways, nil, "a"), nil, nil,
			map[string]string{"a": ReasonContainerCreating}},
		{"nothing started: every container PodInitializing", pod(v1.RestartPolicyAlways, []string{"i1", "i2"}, "a"), nil, nil,
			map[string]string{"i1": ReasonPodInitializing, "i2": ReasonPodInitializing, "a": ReasonPodInitializing}},
		{"first init container done: the second and the app container PodInitializing", pod(v1.RestartPolicyAlways, []string{"i1", "i2"}, "a"),
			rt(instance("i1", podruntime.Exited, 0, 1, 0)), nil,
			map[string]string{"i2": ReasonPodInitializing, "a": ReasonPodInitializing}},
		{"first init container crash-looping under Always: the second PodInitializing", pod(v1.RestartPolicyAlways, []string{"i1", "i2"}, "a"),
			rt(instance("i1", podruntime.Exited, 1, 1, 0)), map[string]Waiting{"i1": {Reason: ReasonCrashLoopBackOff}},
			map[string]string{"i1": ReasonCrashLoopBackOff, "i2": ReasonPodInitializing, "a": ReasonPodInitializing}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := Generate(Input{Pod: tc.pod, Runtime: tc.rt, Waiting: tc.waiting, Now: now})
			for name, want := range tc.want {
				st, ok := find(append(append([]v1.ContainerStatus{}, s.InitContainerStatuses...), s.ContainerStatuses...), name)
				if !ok {
					t.Fatalf("no status of %s", name)
				}
				if st.State.Waiting == nil || st.State.Waiting.Reason != want {
					t.Errorf("%s state = %+v, want waiting with %s", name, st.State, want)
				}
			}
		})
	}
}

func TestConditions(t *testing.T) {
	type cond struct {
		status          v1.ConditionStatus
		reason, message string
	}
	cases := []struct {
		name  string
		pod   *v1.Pod
		rt    *podruntime.Pod
		probe Probes
		want  map[v1.PodConditionType]cond
	}{
		{name: "running without probes: all True", pod: pod(v1.RestartPolicyAlways, nil, "a"), rt: rt(instance("a", podruntime.Running, 0, 1, 0)),
			want: map[v1.PodConditionType]cond{
				v1.PodReadyToStartContainers: {status: v1.ConditionTrue}, v1.PodInitialized: {status: v1.ConditionTrue},
				v1.ContainersReady: {status: v1.ConditionTrue}, v1.PodReady: {status: v1.ConditionTrue}, v1.PodScheduled: {status: v1.ConditionTrue}}},
		{name: "nothing yet: no sandbox, not ready", pod: pod(v1.RestartPolicyAlways, []string{"i"}, "a", "b"),
			want: map[v1.PodConditionType]cond{
				v1.PodReadyToStartContainers: {v1.ConditionFalse, "PodSandboxNotReady", "no pod sandbox exists"},
				v1.PodInitialized:            {v1.ConditionFalse, "ContainersNotInitialized", "containers with incomplete status: [i]"},
				v1.ContainersReady:           {v1.ConditionFalse, "ContainersNotReady", "containers with unready status: [a b]"},
				v1.PodReady:                  {v1.ConditionFalse, "ContainersNotReady", "containers with unready status: [a b]"}}},
		{name: "readiness probe not yet passed", pod: withReadiness(pod(v1.RestartPolicyAlways, nil, "a")), rt: rt(instance("a", podruntime.Running, 0, 1, 0)),
			probe: readiness(false),
			want: map[v1.PodConditionType]cond{
				v1.ContainersReady: {v1.ConditionFalse, "ContainersNotReady", "containers with unready status: [a]"},
				v1.PodReady:        {v1.ConditionFalse, "ContainersNotReady", "containers with unready status: [a]"}}},
		{name: "succeeded", pod: pod(v1.RestartPolicyNever, []string{"i"}, "a"), rt: rt(instance("i", podruntime.Exited, 0, 1, 0), instance("a", podruntime.Exited, 0, 2, 0)),
			want: map[v1.PodConditionType]cond{
				v1.PodInitialized: {v1.ConditionTrue, "PodCompleted", ""}, v1.ContainersReady: {v1.ConditionFalse, "PodCompleted", ""},
				v1.PodReady: {v1.ConditionFalse, "PodCompleted", ""}}},
		{name: "failed", pod: pod(v1.RestartPolicyNever, nil, "a"), rt: rt(instance("a", podruntime.Exited, 3, 1, 0)),
			want: map[v1.PodConditionType]cond{v1.ContainersReady: {v1.ConditionFalse, "PodFailed", ""}, v1.PodReady: {v1.ConditionFalse, "PodFailed", ""}}},
		{name: "readiness gate missing", pod: withGate(pod(v1.RestartPolicyAlways, nil, "a")), rt: rt(instance("a", podruntime.Running, 0, 1, 0)),
			want: map[v1.PodConditionType]cond{
				v1.ContainersReady: {status: v1.ConditionTrue},
				v1.PodReady:        {v1.ConditionFalse, "ReadinessGatesNotReady", `corresponding condition of pod readiness gate "example.com/lb" does not exist.`}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := Generate(Input{Pod: tc.pod, Runtime: tc.rt, Probes: tc.probe, Now: now})
			for typ, w := range tc.want {
				c := condition(s, typ)
				if c.Status != w.status || c.Reason != w.reason || c.Message != w.message {
					t.Errorf("%s = %s/%q/%q, want %s/%q/%q", typ, c.Status, c.Reason, c.Message, w.status, w.reason, w.message)
				}
			}
		})
	}
}

// TestLastTransitionTimeOnlyOnFlip: a condition keeps its time while its
// status stays, and takes the new time when it flips.
func TestLastTransitionTimeOnlyOnFlip(t *testing.T) {
	p := pod(v1.RestartPolicyAlways, nil, "a")
	first := Generate(Input{Pod: p, Now: t0})
	same := Generate(Input{Pod: p, Old: first, Now: t0.Add(time.Minute)})
	if got := condition(same, v1.PodReady).LastTransitionTime; !got.Time.Equal(t0) {
		t.Errorf("Ready unchanged: lastTransitionTime = %v, want %v", got, t0)
	}
	flipped := Generate(Input{Pod: p, Old: same, Runtime: rt(instance("a", podruntime.Running, 0, 1, 0)), Now: t0.Add(2 * time.Minute)})
	if got := condition(flipped, v1.PodReady).LastTransitionTime; !got.Time.Equal(t0.Add(2 * time.Minute)) {
		t.Errorf("Ready flipped: lastTransitionTime = %v, want %v", got, t0.Add(2*time.Minute))
	}
	if got := condition(flipped, v1.PodScheduled).LastTransitionTime; !got.Time.Equal(t0) {
		t.Errorf("PodScheduled unchanged: lastTransitionTime = %v, want %v", got, t0)
	}
	if !flipped.StartTime.Time.Equal(t0) {
		t.Errorf("startTime = %v, want it kept at %v", flipped.StartTime, t0)
	}
}

func TestForeignConditionsKept(t *testing.T) {
	old := v1.PodStatus{Conditions: []v1.PodCondition{{Type: "example.com/lb", Status: v1.ConditionTrue}, {Type: v1.DisruptionTarget, Status: v1.ConditionTrue}}}
	s := Generate(Input{Pod: withGate(pod(v1.RestartPolicyAlways, nil, "a")), Runtime: rt(instance("a", podruntime.Running, 0, 1, 0)), Old: old, Now: now})
	if c := condition(s, "example.com/lb"); c.Status != v1.ConditionTrue {
		t.Errorf("foreign condition lost: %+v", s.Conditions)
	}
	if c := condition(s, v1.PodReady); c.Status != v1.ConditionTrue {
		t.Errorf("Ready with its gate True = %+v, want True", c)
	}
}

type readiness bool

func (r readiness) Ready(string) bool   { return bool(r) }
func (r readiness) Started(string) bool { return true }

func withReadiness(p *v1.Pod) *v1.Pod {
	p.Spec.Containers[0].ReadinessProbe = &v1.Probe{}
	return p
}

func withGate(p *v1.Pod) *v1.Pod {
	p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/lb"}}
	return p
}
