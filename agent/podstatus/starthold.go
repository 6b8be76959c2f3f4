package podstatus

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kite-project/kite/agent/podactions"
	"github.com/kite-project/kite/agent/podruntime"
)

// StartHold is how much longer the running instance n of container c is
// reported as not yet started (waiting, as before its start), or 0 when
// it is reported as it is.
//
// Only a container with stdin and stdinOnce is held: what `kubectl run
// -i/-it` (and other interactive clients) create; controllers never set
// stdinOnce. kubectl waits for such a pod to be Running and Ready and then
// attaches, or prints the container's log when the pod has already ended.
// The kubelet learns of a start only at its next PLEG relist (period, 1 s),
// so a one-shot command is nearly always done by then, the pod is reported
// Succeeded or Failed, and kubectl prints the log. Reported at once, the
// attach often lands after the command wrote and before it exited, and
// carries nothing. Held for the relist period, the container keeps the
// kubelet's timing: an instance that exits within it is reported
// terminated (stateOf), one that still runs (a shell) is reported running
// and kubectl attaches, as upstream.
//
// A container that its policy restarts after it exits 0 (restartPolicy
// Always, kubectl run's default) is not held: its pod never ends, so a
// one-shot command held each time it runs would never be reported running
// and kubectl would wait for it until its timeout. It is reported at
// once, kubectl attaches to one of its runs, and the agent's server
// replays that run's output so far into the first attach session
// (agent/server replaysFirstAttach).
//
// The hold is measured from the runtime's start time, and never exceeds
// period (a start time ahead of now, from a clock that stepped back, holds
// no longer than period from now).
func StartHold(pod *v1.Pod, c *v1.Container, n *podruntime.Container, now time.Time, period time.Duration) time.Duration {
	if c == nil || n == nil || !c.Stdin || !c.StdinOnce || period <= 0 || podactions.RestartAfterExit(c, pod, 0) ||
		n.State != podruntime.Running || n.StartedAt.IsZero() {
		return 0
	}
	left := period - now.Sub(n.StartedAt)
	if left <= 0 {
		return 0
	}
	return min(left, period)
}

// NextStart is the soonest end of a StartHold among the pod's containers
// (init and regular): when the pod's status changes by the clock alone.
// 0 is none.
func NextStart(pod *v1.Pod, rt *podruntime.Pod, now time.Time, period time.Duration) time.Duration {
	var next time.Duration
	check := func(cs []v1.Container) {
		for i := range cs {
			if in := rt.Instances(cs[i].Name); len(in) > 0 {
				if h := StartHold(pod, &cs[i], in[0], now, period); h > 0 && (next == 0 || h < next) {
					next = h
				}
			}
		}
	}
	check(pod.Spec.InitContainers)
	check(pod.Spec.Containers)
	return next
}
