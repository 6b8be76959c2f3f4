package podstatus

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kite-project/kite/agent/podruntime"
)

func TestStartHold(t *testing.T) {
	const period = time.Second
	interactive := &v1.Container{Name: "c", Stdin: true, StdinOnce: true}
	started := func(state podruntime.State, ago time.Duration) *podruntime.Container {
		return &podruntime.Container{Name: "c", State: state, StartedAt: now.Add(-ago)}
	}
	onFailure := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyOnFailure}}
	never := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever}}
	always := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways}}
	cases := []struct {
		name   string
		pod    *v1.Pod
		c      *v1.Container
		n      *podruntime.Container
		period time.Duration
		want   time.Duration
	}{
		{"stdin-once, just started", onFailure, interactive, started(podruntime.Running, 0), period, period},
		{"stdin-once, running 300ms", onFailure, interactive, started(podruntime.Running, 300*time.Millisecond), period, 700 * time.Millisecond},
		{"stdin-once, running the period", onFailure, interactive, started(podruntime.Running, period), period, 0},
		{"stdin-once, running longer", onFailure, interactive, started(podruntime.Running, time.Hour), period, 0},
		{"stdin-once, start ahead of the clock", onFailure, interactive, started(podruntime.Running, -time.Hour), period, period},
		{"stdin-once, exited within the period: reported terminated", onFailure, interactive, started(podruntime.Exited, 0), period, 0},
		{"stdin-once, created", onFailure, interactive, started(podruntime.Created, 0), period, 0},
		{"stdin-once, state unknown", onFailure, interactive, started(podruntime.Unknown, 0), period, 0},
		{"stdin-once, no start time", onFailure, interactive, &podruntime.Container{Name: "c", State: podruntime.Running}, period, 0},
		{"stdin-once, no period", onFailure, interactive, started(podruntime.Running, 0), 0, 0},
		{"stdin kept open (kubectl run -i --leave-stdin-open)", onFailure, &v1.Container{Name: "c", Stdin: true}, started(podruntime.Running, 0), period, 0},
		{"stdinOnce without stdin", onFailure, &v1.Container{Name: "c", StdinOnce: true}, started(podruntime.Running, 0), period, 0},
		{"a controller's container", onFailure, &v1.Container{Name: "c"}, started(podruntime.Running, 0), period, 0},
		{"tty alone (kubectl debug -t)", onFailure, &v1.Container{Name: "c", TTY: true, Stdin: true}, started(podruntime.Running, 0), period, 0},
		{"no instance", onFailure, interactive, nil, period, 0},
		{"restartPolicy Never", never, interactive, started(podruntime.Running, 0), period, period},
		{"restartPolicy Always (kubectl run's default): restarted after exit 0, never held", always, interactive, started(podruntime.Running, 0), period, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := StartHold(tc.pod, tc.c, tc.n, now, tc.period); got != tc.want {
				t.Errorf("StartHold = %v, want %v", got, tc.want)
			}
		})
	}
}

// A held start is reported as the kubelet reports it before its relist:
// the instances before it, or waiting to be created.
func TestGenerateHoldsStdinOnceStart(t *testing.T) {
	const period = time.Second
	run := func(policy v1.RestartPolicy, containers ...*podruntime.Container) v1.PodStatus {
		p := pod(policy, nil, "c")
		p.Spec.Containers[0].Stdin, p.Spec.Containers[0].StdinOnce = true, true
		return Generate(Input{Pod: p, Runtime: rt(containers...), Now: now, StartHold: period, RuntimeName: "containerd"})
	}
	at := func(state podruntime.State, code int32, start time.Time, restarts int, id string) *podruntime.Container {
		return &podruntime.Container{ID: id, Name: "c", State: state, ExitCode: code, RestartCount: restarts, CreatedAt: start, StartedAt: start,
			FinishedAt: start.Add(10 * time.Millisecond), Reason: map[bool]string{true: "Completed", false: "Error"}[code == 0]}
	}

	t.Run("first instance running for less than the period", func(t *testing.T) {
		s := run(v1.RestartPolicyOnFailure, at(podruntime.Running, 0, now.Add(-200*time.Millisecond), 0, "a"))
		cs := s.ContainerStatuses[0]
		if s.Phase != v1.PodPending || cs.State.Waiting == nil || cs.State.Waiting.Reason != ReasonContainerCreating || cs.ContainerID != "" || cs.Ready || *cs.Started {
			t.Errorf("status = %s %+v; want Pending, the container waiting (ContainerCreating), no ID, not started", s.Phase, cs)
		}
		if c := condition(s, v1.PodReady); c.Status != v1.ConditionFalse {
			t.Errorf("Ready = %s, want False", c.Status)
		}
	})
	t.Run("first instance running for the period", func(t *testing.T) {
		s := run(v1.RestartPolicyOnFailure, at(podruntime.Running, 0, now.Add(-period), 0, "a"))
		cs := s.ContainerStatuses[0]
		if s.Phase != v1.PodRunning || cs.State.Running == nil || cs.ContainerID != "containerd://a" || !cs.Ready {
			t.Errorf("status = %s %+v; want Running and ready", s.Phase, cs)
		}
	})
	t.Run("first instance exited within the period", func(t *testing.T) {
		s := run(v1.RestartPolicyOnFailure, at(podruntime.Exited, 0, now.Add(-100*time.Millisecond), 0, "a"))
		cs := s.ContainerStatuses[0]
		if s.Phase != v1.PodSucceeded || cs.State.Terminated == nil || cs.State.Terminated.Reason != "Completed" {
			t.Errorf("status = %s %+v; want Succeeded, the container terminated (Completed)", s.Phase, cs)
		}
	})
	t.Run("restarted instance running for less than the period", func(t *testing.T) {
		s := run(v1.RestartPolicyOnFailure, at(podruntime.Exited, 1, now.Add(-time.Minute), 0, "a"), at(podruntime.Running, 0, now.Add(-time.Millisecond), 1, "b"))
		cs := s.ContainerStatuses[0]
		if s.Phase != v1.PodRunning || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 1 || cs.ContainerID != "containerd://a" || cs.RestartCount != 0 {
			t.Errorf("status = %s %+v; want Running (OnFailure), the previous instance's exit 1 as the state", s.Phase, cs)
		}
	})
}

func TestNextStart(t *testing.T) {
	const period = time.Second
	p := pod(v1.RestartPolicyOnFailure, []string{"init"}, "a", "b", "plain")
	p.Spec.InitContainers[0].Stdin, p.Spec.InitContainers[0].StdinOnce = true, true
	for i := range 2 {
		p.Spec.Containers[i].Stdin, p.Spec.Containers[i].StdinOnce = true, true
	}
	inst := func(name string, state podruntime.State, ago time.Duration) *podruntime.Container {
		return &podruntime.Container{ID: name, Name: name, State: state, StartedAt: now.Add(-ago)}
	}
	cases := []struct {
		name string
		rt   *podruntime.Pod
		want time.Duration
	}{
		{"nothing runs", nil, 0},
		{"a held init container", rt(inst("init", podruntime.Running, 100*time.Millisecond)), 900 * time.Millisecond},
		{"the soonest of two", rt(inst("init", podruntime.Exited, time.Minute), inst("a", podruntime.Running, 200*time.Millisecond), inst("b", podruntime.Running, 600*time.Millisecond)), 400 * time.Millisecond},
		{"a plain container is never held", rt(inst("plain", podruntime.Running, 0)), 0},
		{"holds over", rt(inst("a", podruntime.Running, time.Minute), inst("b", podruntime.Exited, 0)), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := NextStart(p, tc.rt, now, period); got != tc.want {
				t.Errorf("NextStart = %v, want %v", got, tc.want)
			}
		})
	}
}
