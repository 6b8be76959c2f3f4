package prober

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func running(id string, since time.Duration) Observation {
	return Observation{Now: t0.Add(since), ContainerID: id, Running: true, StartedAt: t0, Started: true}
}

func TestTick(t *testing.T) {
	readiness := Params{Type: Readiness, InitialDelay: 5 * time.Second, SuccessThreshold: 1, FailureThreshold: 3}
	liveness := Params{Type: Liveness, SuccessThreshold: 1, FailureThreshold: 3}
	startup := Params{Type: Startup, SuccessThreshold: 1, FailureThreshold: 3}
	notStarted := running("a", time.Minute)
	notStarted.Started = false
	exitedNever := Observation{Now: t0, ContainerID: "a", Exited: true}
	exitedRestart := exitedNever
	exitedRestart.WillRestart = true
	deleting := running("a", time.Minute)
	deleting.Deleting = true

	cases := []struct {
		name string
		p    Params
		s    State
		o    Observation
		want Step
		next State
	}{
		{"terminal pod stops", readiness, State{ContainerID: "a"}, Observation{Terminal: true, ContainerID: "a"}, Step{Stop: true}, State{ContainerID: "a"}},
		{"no container waits", readiness, State{}, Observation{Now: t0}, Step{}, State{}},
		{"new container: readiness starts Failure, before the delay no check", readiness, State{}, running("a", time.Second), Step{Publish: true, Result: Failure}, State{ContainerID: "a"}},
		{"new container: liveness starts Success and checks", liveness, State{}, running("a", time.Second), Step{Publish: true, Result: Success, Probe: true}, State{ContainerID: "a"}},
		{"new container: startup starts Unknown", startup, State{}, notStarted, Step{Publish: true, Result: Unknown, Probe: true}, State{ContainerID: "a"}},
		{"replaced container resets the hold and the count", liveness, State{ContainerID: "a", OnHold: true, last: Failure, run: 2}, running("b", time.Minute), Step{Publish: true, Result: Success, Probe: true}, State{ContainerID: "b"}},
		{"on hold: nothing", liveness, State{ContainerID: "a", OnHold: true}, running("a", time.Minute), Step{}, State{ContainerID: "a", OnHold: true}},
		{"initial delay not passed", readiness, State{ContainerID: "a"}, running("a", 4999*time.Millisecond), Step{}, State{ContainerID: "a"}},
		{"initial delay passed", readiness, State{ContainerID: "a"}, running("a", 5*time.Second), Step{Probe: true}, State{ContainerID: "a"}},
		{"readiness waits for startup", readiness, State{ContainerID: "a"}, notStarted, Step{}, State{ContainerID: "a"}},
		{"liveness waits for startup", liveness, State{ContainerID: "a"}, notStarted, Step{}, State{ContainerID: "a"}},
		{"startup checks until started", startup, State{ContainerID: "a"}, notStarted, Step{Probe: true}, State{ContainerID: "a"}},
		{"startup stops checking once started", startup, State{ContainerID: "a"}, running("a", time.Minute), Step{}, State{ContainerID: "a"}},
		{"exited, no restart: Failure and stop", readiness, State{ContainerID: "a"}, exitedNever, Step{Publish: true, Result: Failure, Stop: true}, State{ContainerID: "a"}},
		{"exited, will restart: Failure and wait", readiness, State{ContainerID: "a"}, exitedRestart, Step{Publish: true, Result: Failure}, State{ContainerID: "a"}},
		{"deleting: liveness Success and stop", liveness, State{ContainerID: "a"}, deleting, Step{Publish: true, Result: Success, Stop: true}, State{ContainerID: "a"}},
		{"deleting: readiness goes on", readiness, State{ContainerID: "a"}, deleting, Step{Probe: true}, State{ContainerID: "a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next, got := Tick(tc.p, tc.s, tc.o)
			if got != tc.want {
				t.Errorf("step = %+v, want %+v", got, tc.want)
			}
			if next != tc.next {
				t.Errorf("state = %+v, want %+v", next, tc.next)
			}
		})
	}
}

// TestRecordThresholds feeds sequences of check results and checks what
// is published after each: only a run reaching its threshold publishes.
func TestRecordThresholds(t *testing.T) {
	S, F := Success, Failure
	type pub struct {
		ok bool
		r  Result
	}
	none, succ, fail := pub{}, pub{true, S}, pub{true, F}
	cases := []struct {
		name    string
		p       Params
		results []Result
		want    []pub
		hold    bool
	}{
		{"readiness success 1 failure 3", Params{Type: Readiness, SuccessThreshold: 1, FailureThreshold: 3},
			[]Result{S, F, F, S, F, F, F, F, S}, []pub{succ, none, none, succ, none, none, fail, fail, succ}, false},
		{"readiness success 2 failure 2", Params{Type: Readiness, SuccessThreshold: 2, FailureThreshold: 2},
			[]Result{S, S, F, S, F, F, S, S}, []pub{none, succ, none, none, none, fail, none, succ}, false},
		{"liveness failure at the third holds", Params{Type: Liveness, SuccessThreshold: 1, FailureThreshold: 3},
			[]Result{S, F, F, F}, []pub{succ, none, none, fail}, true},
		{"startup success holds", Params{Type: Startup, SuccessThreshold: 1, FailureThreshold: 3},
			[]Result{F, F, S}, []pub{none, none, succ}, true},
		{"startup failure at threshold holds", Params{Type: Startup, SuccessThreshold: 1, FailureThreshold: 2},
			[]Result{F, F}, []pub{none, fail}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := State{ContainerID: "a"}
			for i, r := range tc.results {
				var st Step
				s, st = Record(tc.p, s, r)
				if got := (pub{st.Publish, st.Result}); got != tc.want[i] {
					t.Fatalf("after result %d (%v): published %+v, want %+v", i, r, got, tc.want[i])
				}
			}
			if s.OnHold != tc.hold {
				t.Errorf("on hold = %v, want %v", s.OnHold, tc.hold)
			}
		})
	}
}

func TestParamsForDefaults(t *testing.T) {
	p := ParamsFor(Readiness, &v1.Probe{})
	if p.Period != 10*time.Second || p.SuccessThreshold != 1 || p.FailureThreshold != 3 || p.InitialDelay != 0 {
		t.Errorf("defaults = %+v, want period 10s, thresholds 1 and 3, no delay", p)
	}
}
