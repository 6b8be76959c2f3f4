package podactions

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite/agent/podruntime"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func spec(policy v1.RestartPolicy, inits []v1.Container, names ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}, Spec: v1.PodSpec{RestartPolicy: policy, InitContainers: inits}}
	for _, n := range names {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: n, Image: "img"})
	}
	return p
}

func ctr(name string) v1.Container { return v1.Container{Name: name, Image: "img"} }

func sidecar(name string) v1.Container {
	always := v1.ContainerRestartPolicyAlways
	return v1.Container{Name: name, Image: "img", RestartPolicy: &always}
}

// inst is a container instance: state, exit code; its ID is name+"-"+n.
func inst(name string, state podruntime.State, code int32, age int) *podruntime.Container {
	c := ctr(name)
	return &podruntime.Container{ID: name + "-" + string(rune('0'+age)), Name: name, State: state, ExitCode: code,
		CreatedAt: t0.Add(time.Duration(age) * time.Second), Hash: podruntime.HashContainer(&c)}
}

func running(cs ...*podruntime.Container) *podruntime.Pod {
	p := &podruntime.Pod{UID: "u", Sandboxes: []podruntime.Sandbox{{ID: "sb", Ready: true}}}
	for i := len(cs) - 1; i >= 0; i-- { // newest first
		p.Containers = append(p.Containers, cs[i])
	}
	return p
}

type probeResults struct{ liveFailed, startFailed map[string]bool }

func (p probeResults) Liveness(id string) (bool, bool) { return p.liveFailed[id], true }
func (p probeResults) Startup(id string) (bool, bool, bool) {
	return !p.startFailed[id], p.startFailed[id], true
}

func TestCompute(t *testing.T) {
	changed := inst("a", podruntime.Running, 0, 1)
	changed.Hash = "old"
	deleted := spec(v1.RestartPolicyAlways, nil, "a")
	deleted.DeletionTimestamp = &metav1.Time{Time: t0}
	cases := []struct {
		name   string
		pod    *v1.Pod
		status *podruntime.Pod
		probes Probes
		want   Actions
	}{
		{name: "new pod: sandbox, then every container",
			pod: spec(v1.RestartPolicyAlways, nil, "a", "b"), status: &podruntime.Pod{},
			want: Actions{KillPod: true, CreateSandbox: true, ContainersToStart: []int{0, 1}}},
		{name: "new pod with init containers: sandbox and the first init container only",
			pod: spec(v1.RestartPolicyAlways, []v1.Container{ctr("i1"), ctr("i2")}, "a"), status: &podruntime.Pod{},
			want: Actions{KillPod: true, CreateSandbox: true, InitContainersToStart: []int{0}}},
		{name: "all running: nothing to do",
			pod:    spec(v1.RestartPolicyAlways, nil, "a", "b"),
			status: running(inst("a", podruntime.Running, 0, 1), inst("b", podruntime.Running, 0, 2)),
			want:   Actions{SandboxID: "sb"}},
		{name: "a missing container is started",
			pod: spec(v1.RestartPolicyNever, nil, "a", "b"), status: running(inst("a", podruntime.Running, 0, 1)),
			want: Actions{SandboxID: "sb", ContainersToStart: []int{1}}},
		{name: "Always restarts a container that exited 0",
			pod: spec(v1.RestartPolicyAlways, nil, "a"), status: running(inst("a", podruntime.Exited, 0, 1)),
			want: Actions{SandboxID: "sb", ContainersToStart: []int{0}}},
		{name: "OnFailure restarts exit 1",
			pod: spec(v1.RestartPolicyOnFailure, nil, "a"), status: running(inst("a", podruntime.Exited, 1, 1)),
			want: Actions{SandboxID: "sb", ContainersToStart: []int{0}}},
		{name: "OnFailure after exit 0 of the only container: the pod is done",
			pod: spec(v1.RestartPolicyOnFailure, nil, "a"), status: running(inst("a", podruntime.Exited, 0, 1)),
			want: Actions{SandboxID: "sb", KillPod: true}},
		{name: "Never after exit 3: the pod is done",
			pod: spec(v1.RestartPolicyNever, nil, "a"), status: running(inst("a", podruntime.Exited, 3, 1)),
			want: Actions{SandboxID: "sb", KillPod: true}},
		{name: "Never keeps the pod while another container runs",
			pod:    spec(v1.RestartPolicyNever, nil, "a", "b"),
			status: running(inst("a", podruntime.Exited, 3, 1), inst("b", podruntime.Running, 0, 2)),
			want:   Actions{SandboxID: "sb"}},
		{name: "a deleted pod restarts nothing",
			pod: deleted, status: running(inst("a", podruntime.Exited, 1, 1)),
			want: Actions{SandboxID: "sb", KillPod: true}},
		{name: "definition changed: killed and restarted whatever the policy",
			pod: spec(v1.RestartPolicyNever, nil, "a"), status: running(changed),
			want: Actions{SandboxID: "sb", ContainersToStart: []int{0},
				ContainersToKill: map[string]Kill{changed.ID: {Name: "a", ID: changed.ID, Message: "Container a definition changed, will be restarted"}}}},
		{name: "liveness failed under Always: killed, will be restarted",
			pod: spec(v1.RestartPolicyAlways, nil, "a"), status: running(inst("a", podruntime.Running, 0, 1)),
			probes: probeResults{liveFailed: map[string]bool{"a-1": true}},
			want: Actions{SandboxID: "sb", ContainersToStart: []int{0},
				ContainersToKill: map[string]Kill{"a-1": {Name: "a", ID: "a-1", Reason: ReasonLivenessProbe, Message: "Container a failed liveness probe, will be restarted"}}}},
		{name: "liveness failed under Never: killed, the pod is done",
			pod: spec(v1.RestartPolicyNever, nil, "a"), status: running(inst("a", podruntime.Running, 0, 1)),
			probes: probeResults{liveFailed: map[string]bool{"a-1": true}},
			want: Actions{SandboxID: "sb", KillPod: true,
				ContainersToKill: map[string]Kill{"a-1": {Name: "a", ID: "a-1", Reason: ReasonLivenessProbe, Message: "Container a failed liveness probe"}}}},
		{name: "unknown state: killed before it is started again",
			pod: spec(v1.RestartPolicyAlways, nil, "a"), status: running(inst("a", podruntime.Unknown, 0, 1)),
			want: Actions{SandboxID: "sb", ContainersToStart: []int{0},
				ContainersToKill: map[string]Kill{"a-1": {Name: "a", ID: "a-1", Reason: ReasonUnknown, Message: `Container is in "unknown" state, try killing it before restart`}}}},
		{name: "init container running: wait",
			pod:    spec(v1.RestartPolicyAlways, []v1.Container{ctr("i1"), ctr("i2")}, "a"),
			status: running(inst("i1", podruntime.Running, 0, 1)),
			want:   Actions{SandboxID: "sb"}},
		{name: "init container exited 0: the next one",
			pod:    spec(v1.RestartPolicyAlways, []v1.Container{ctr("i1"), ctr("i2")}, "a"),
			status: running(inst("i1", podruntime.Exited, 0, 1)),
			want:   Actions{SandboxID: "sb", InitContainersToStart: []int{1}}},
		{name: "last init container exited 0: the app containers",
			pod:    spec(v1.RestartPolicyAlways, []v1.Container{ctr("i1"), ctr("i2")}, "a", "b"),
			status: running(inst("i1", podruntime.Exited, 0, 1), inst("i2", podruntime.Exited, 0, 2)),
			want:   Actions{SandboxID: "sb", ContainersToStart: []int{0, 1}}},
		{name: "init container failed under OnFailure: run it again",
			pod:    spec(v1.RestartPolicyOnFailure, []v1.Container{ctr("i1")}, "a"),
			status: running(inst("i1", podruntime.Exited, 2, 1)),
			want:   Actions{SandboxID: "sb", InitContainersToStart: []int{0}}},
		{name: "init container failed under Never: the pod is killed",
			pod:    spec(v1.RestartPolicyNever, []v1.Container{ctr("i1")}, "a"),
			status: running(inst("i1", podruntime.Exited, 2, 1)),
			want:   Actions{SandboxID: "sb", KillPod: true}},
		{name: "init container created but not started: start it again",
			pod:    spec(v1.RestartPolicyAlways, []v1.Container{ctr("i1")}, "a"),
			status: running(inst("i1", podruntime.Created, 0, 1)),
			want:   Actions{SandboxID: "sb", InitContainersToStart: []int{0}}},
		{name: "sidecar running and started: the next init container starts beside it",
			pod:    spec(v1.RestartPolicyAlways, []v1.Container{sidecar("s"), ctr("i2")}, "a"),
			status: running(inst("s", podruntime.Running, 0, 1)),
			want:   Actions{SandboxID: "sb", InitContainersToStart: []int{1}}},
		{name: "sidecar as last init container: app containers start",
			pod:    spec(v1.RestartPolicyAlways, []v1.Container{sidecar("s")}, "a"),
			status: running(inst("s", podruntime.Running, 0, 1)),
			want:   Actions{SandboxID: "sb", ContainersToStart: []int{0}}},
		{name: "sidecar exited after initialization: restarted",
			pod:    spec(v1.RestartPolicyNever, []v1.Container{sidecar("s")}, "a"),
			status: running(inst("s", podruntime.Exited, 1, 1), inst("a", podruntime.Running, 0, 2)),
			want:   Actions{SandboxID: "sb", InitContainersToStart: []int{0}}},
		{name: "app containers done under Never: the running sidecar does not keep the pod",
			pod:    spec(v1.RestartPolicyNever, []v1.Container{sidecar("s")}, "a"),
			status: running(inst("s", podruntime.Running, 0, 1), inst("a", podruntime.Exited, 0, 2)),
			want:   Actions{SandboxID: "sb", KillPod: true}},
		{name: "init containers lost from the runtime after the app started: not run again",
			pod:    spec(v1.RestartPolicyAlways, []v1.Container{ctr("i1")}, "a"),
			status: running(inst("a", podruntime.Running, 0, 2)),
			want:   Actions{SandboxID: "sb"}},
		{name: "sandbox not ready: a new one, attempt+1, everything again",
			pod:    spec(v1.RestartPolicyAlways, nil, "a"),
			status: &podruntime.Pod{Sandboxes: []podruntime.Sandbox{{ID: "sb", Attempt: 0}}, Containers: []*podruntime.Container{inst("a", podruntime.Exited, 0, 1)}},
			want:   Actions{KillPod: true, CreateSandbox: true, SandboxID: "sb", Attempt: 1, ContainersToStart: []int{0}}},
		{name: "sandbox gone under Never after it ran: no new sandbox",
			pod:    spec(v1.RestartPolicyNever, nil, "a"),
			status: &podruntime.Pod{Sandboxes: []podruntime.Sandbox{{ID: "sb"}}, Containers: []*podruntime.Container{inst("a", podruntime.Exited, 0, 1)}},
			want:   Actions{KillPod: true, SandboxID: "sb", Attempt: 1}},
		{name: "sandbox gone under OnFailure, all succeeded: no new sandbox",
			pod:    spec(v1.RestartPolicyOnFailure, nil, "a"),
			status: &podruntime.Pod{Sandboxes: []podruntime.Sandbox{{ID: "sb"}}, Containers: []*podruntime.Container{inst("a", podruntime.Exited, 0, 1)}},
			want:   Actions{KillPod: true, SandboxID: "sb", Attempt: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Compute(tc.pod, tc.status, tc.probes)
			if tc.want.ContainersToKill == nil {
				tc.want.ContainersToKill = map[string]Kill{}
			}
			if len(got.InitContainersToStart) == 0 {
				got.InitContainersToStart = nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Compute:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestRestartAfterExit(t *testing.T) {
	never := v1.ContainerRestartPolicyNever
	onFailure := v1.ContainerRestartPolicyOnFailure
	rule := []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	cases := []struct {
		name      string
		pod       v1.RestartPolicy
		container *v1.ContainerRestartPolicy
		rules     []v1.ContainerRestartRule
		code      int32
		want      bool
	}{
		{"Always, exit 0", v1.RestartPolicyAlways, nil, nil, 0, true},
		{"Always, exit 1", v1.RestartPolicyAlways, nil, nil, 1, true},
		{"OnFailure, exit 0", v1.RestartPolicyOnFailure, nil, nil, 0, false},
		{"OnFailure, exit 1", v1.RestartPolicyOnFailure, nil, nil, 1, true},
		{"Never, exit 1", v1.RestartPolicyNever, nil, nil, 1, false},
		{"container Never overrides pod Always", v1.RestartPolicyAlways, &never, nil, 1, false},
		{"container OnFailure overrides pod Never", v1.RestartPolicyNever, &onFailure, nil, 1, true},
		{"rule In 42 matches under Never", v1.RestartPolicyNever, &never, rule, 42, true},
		{"rule In 42 does not match 1: container policy Never", v1.RestartPolicyNever, &never, rule, 1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &v1.Container{Name: "c", RestartPolicy: tc.container, RestartPolicyRules: tc.rules}
			pod := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: tc.pod}}
			if got := RestartAfterExit(c, pod, tc.code); got != tc.want {
				t.Errorf("RestartAfterExit = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestBackOffSequence follows a container that crashes at once each time:
// restarts come after 0, 10, 20, 40, 80, 160, 300, 300 s.
func TestBackOffSequence(t *testing.T) {
	var b BackOff
	now := t0
	var waits []time.Duration
	for range 8 {
		finished := now // it exits as soon as it starts
		var waited time.Duration
		for {
			wait, blocked := b.Check("k", finished, now)
			if !blocked {
				break
			}
			now = now.Add(wait)
			waited += wait
		}
		waits = append(waits, waited)
	}
	want := []time.Duration{0, 10, 20, 40, 80, 160, 300, 300}
	for i := range want {
		want[i] *= time.Second
	}
	if !reflect.DeepEqual(waits, want) {
		t.Errorf("waits = %v, want %v", waits, want)
	}
}

// TestBackOffResetsAfterTenMinutesRunning: a container that ran for more
// than 10 minutes before it exited restarts at once and starts the back-off
// over.
func TestBackOffResetsAfterTenMinutesRunning(t *testing.T) {
	var b BackOff
	for _, step := range []struct {
		finished, now time.Duration
		blocked       bool
	}{
		{0, 0, false}, // first restart: immediate, delay now 10 s
		{1 * time.Second, 5 * time.Second, true},
		{1 * time.Second, 12 * time.Second, false}, // delay now 20 s
		{13 * time.Second, 20 * time.Second, true},
		{12*time.Second + 601*time.Second, 12*time.Second + 602*time.Second, false}, // ran > 10 min
		{12*time.Second + 603*time.Second, 12*time.Second + 610*time.Second, true},  // back to 10 s
		{12*time.Second + 603*time.Second, 12*time.Second + 614*time.Second, false},
	} {
		_, blocked := b.Check("k", t0.Add(step.finished), t0.Add(step.now))
		if blocked != step.blocked {
			t.Fatalf("Check(finished %v, now %v) blocked = %v, want %v", step.finished, step.now, blocked, step.blocked)
		}
	}
	if d := b.Delay("k"); d != 20*time.Second {
		t.Errorf("delay after the reset and one more restart = %v, want 20s", d)
	}
}
