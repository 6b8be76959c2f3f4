package cri

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kite-project/kite/agent"
	"github.com/kite-project/kite/agent/runtime/cri/critest"
)

// The pod life cycle is the agent's, above the runtime: the same table of
// behaviours runs on the process runtime and on containerd, and each
// expects what the kubelet sets. Every command is a busybox or POSIX shell
// one, so that it means the same as a host process (the host's sh and
// busybox) and in the busybox image.

// lifecycleCase is one behaviour: the pod it creates and what its status
// must come to.
type lifecycleCase struct {
	name string
	// pod shapes the pod; port is a free TCP port of the node for the
	// probes' servers (pods share the node's network on both runtimes
	// here).
	pod func(p *v1.Pod, port int)
	// check waits for the behaviour and asserts it.
	check func(t *testing.T, a *testAgent, p *v1.Pod)
}

// shell makes c run script with sh -c (the process runtime needs a
// command; the image's sh is busybox).
func shell(c *v1.Container, script string) {
	c.Command = []string{"sh", "-c", script}
	c.Args = nil
	c.Env = append(c.Env, v1.EnvVar{Name: "POD_UID", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.uid"}}})
}

// shared is an emptyDir at /kite-lifecycle-shared for containers of one
// pod to meet in.
func sharedDir(p *v1.Pod) {
	p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "shared", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	for _, cs := range [][]v1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			cs[i].VolumeMounts = append(cs[i].VolumeMounts, v1.VolumeMount{Name: "shared", MountPath: "/kite-lifecycle-shared"})
		}
	}
}

// A loop that ends with exit code 7 on SIGTERM: a shell that is the
// container's PID 1 on containerd would ignore the signal otherwise.
const trapLoop = `trap 'exit 7' TERM; while :; do sleep 0.2; done`

// ignoreTermLoop ignores SIGTERM (and its sleeps do too): only SIGKILL ends it.
const ignoreTermLoop = `trap '' TERM; while :; do sleep 0.2; done`

func execProbe(script string) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", script}}},
		PeriodSeconds: 1, FailureThreshold: 1, TimeoutSeconds: 5}
}

func status(p *v1.Pod, init bool, name string) *v1.ContainerStatus {
	list := p.Status.ContainerStatuses
	if init {
		list = p.Status.InitContainerStatuses
	}
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

func mainStatus(p *v1.Pod) *v1.ContainerStatus { return status(p, false, "main") }

func phase(ph v1.PodPhase) func(*v1.Pod) bool {
	return func(p *v1.Pod) bool { return p.Status.Phase == ph }
}

func restarted(init bool, name string) func(*v1.Pod) bool {
	return func(p *v1.Pod) bool {
		s := status(p, init, name)
		return s != nil && s.RestartCount >= 1 && s.LastTerminationState.Terminated != nil
	}
}

func condition(p *v1.Pod, t v1.PodConditionType) v1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// terminated checks a terminated state as the kubelet fills it.
func terminated(t *testing.T, what string, tm *v1.ContainerStateTerminated, code int32, reason, message string) {
	t.Helper()
	if tm == nil {
		t.Errorf("%s: not terminated", what)
		return
	}
	if tm.ExitCode != code || tm.Reason != reason || tm.Message != message {
		t.Errorf("%s: exit %d reason %q message %q; want %d %q %q", what, tm.ExitCode, tm.Reason, tm.Message, code, reason, message)
	}
	if tm.StartedAt.IsZero() || tm.FinishedAt.IsZero() || tm.FinishedAt.Before(&tm.StartedAt) || tm.ContainerID == "" {
		t.Errorf("%s: startedAt %v finishedAt %v containerID %q; want both times, in order, and the ID", what, tm.StartedAt, tm.FinishedAt, tm.ContainerID)
	}
}

var lifecycleCases = []lifecycleCase{
	{
		name: "always-restarts-completed",
		pod: func(p *v1.Pod, _ int) {
			p.Spec.RestartPolicy = v1.RestartPolicyAlways
			shell(&p.Spec.Containers[0], "exit 0")
		},
		check: func(t *testing.T, a *testAgent, p *v1.Pod) {
			p = a.wait(t, p, "a restart", restarted(false, "main"))
			terminated(t, "lastState", mainStatus(p).LastTerminationState.Terminated, 0, "Completed", "")
			if p.Status.Phase != v1.PodRunning {
				t.Errorf("phase %s, want Running (restartPolicy Always)", p.Status.Phase)
			}
		},
	},
	{
		name: "onfailure-exit0-succeeds",
		pod: func(p *v1.Pod, _ int) {
			p.Spec.RestartPolicy = v1.RestartPolicyOnFailure
			shell(&p.Spec.Containers[0], "exit 0")
		},
		check: func(t *testing.T, a *testAgent, p *v1.Pod) {
			p = a.wait(t, p, "Succeeded", phase(v1.PodSucceeded))
			s := mainStatus(p)
			terminated(t, "state", s.State.Terminated, 0, "Completed", "")
			if s.RestartCount != 0 || s.Ready || s.Started == nil || *s.Started {
				t.Errorf("restartCount %d ready %v started %v; want 0, false, false", s.RestartCount, s.Ready, s.Started)
			}
		},
	},
	{
		name: "onfailure-crashloop-backoff",
		pod: func(p *v1.Pod, _ int) {
			p.Spec.RestartPolicy = v1.RestartPolicyOnFailure
			shell(&p.Spec.Containers[0], "exit 2")
		},
		check: func(t *testing.T, a *testAgent, p *v1.Pod) {
			p = a.wait(t, p, "CrashLoopBackOff", func(p *v1.Pod) bool {
				s := mainStatus(p)
				return s != nil && s.RestartCount >= 1 && s.State.Waiting != nil && s.State.Waiting.Reason == "CrashLoopBackOff"
			})
			s := mainStatus(p)
			terminated(t, "lastState", s.LastTerminationState.Terminated, 2, "Error", "")
			want := fmt.Sprintf("restarting failed container=main pod=%s_%s(%s)", p.Name, p.Namespace, p.UID)
			if !strings.HasPrefix(s.State.Waiting.Message, "back-off ") || !strings.HasSuffix(s.State.Waiting.Message, want) {
				t.Errorf("waiting message %q, want back-off <d> %s", s.State.Waiting.Message, want)
			}
			if p.Status.Phase != v1.PodRunning {
				t.Errorf("phase %s, want Running", p.Status.Phase)
			}
		},
	},
	{
		name: "never-exit3-fails-with-message",
		pod: func(p *v1.Pod, _ int) {
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			shell(&p.Spec.Containers[0], "echo -n bye > /dev/termination-log; exit 3")
		},
		check: func(t *testing.T, a *testAgent, p *v1.Pod) {
			p = a.wait(t, p, "Failed", phase(v1.PodFailed))
			terminated(t, "state", mainStatus(p).State.Terminated, 3, "Error", "bye")
		},
	},
	{
		name: "fallback-to-logs-on-error",
		pod: func(p *v1.Pod, _ int) {
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			p.Spec.Containers[0].TerminationMessagePolicy = v1.TerminationMessageFallbackToLogsOnError
			shell(&p.Spec.Containers[0], "echo one; echo two; exit 1")
		},
		check: func(t *testing.T, a *testAgent, p *v1.Pod) {
			p = a.wait(t, p, "Failed", phase(v1.PodFailed))
			terminated(t, "state", mainStatus(p).State.Terminated, 1, "Error", "one\ntwo\n")
		},
	},
	{
		name: "memory-limit-oom-killed",
		pod: func(p *v1.Pod, _ int) {
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			c := &p.Spec.Containers[0]
			// tail keeps a line that never ends in memory.
			shell(c, "exec tail /dev/zero")
			c.Resources = v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("32Mi")}}
		},
		check: func(t *testing.T, a *testAgent, p *v1.Pod) {
			p = a.wait(t, p, "Failed", phase(v1.PodFailed))
			terminated(t, "state", mainStatus(p).State.Terminated, 137, "OOMKilled", "")
		},
	},
	{
		name: "init-containers-run-in-order",
		pod: func(p *v1.Pod, _ int) {
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			p.Spec.InitContainers = []v1.Container{{Name: "one", Image: critest.BusyBox}, {Name: "two", Image: critest.BusyBox}}
			shell(&p.Spec.InitContainers[0], "echo -n 1 >> /kite-lifecycle-shared/order")
			shell(&p.Spec.InitContainers[1], "echo -n 2 >> /kite-lifecycle-shared/order")
			shell(&p.Spec.Containers[0], "cat /kite-lifecycle-shared/order > /dev/termination-log")
			sharedDir(p)
		},
		check: func(t *testing.T, a *testAgent, p *v1.Pod) {
			p = a.wait(t, p, "Succeeded", phase(v1.PodSucceeded))
			terminated(t, "main", mainStatus(p).State.Terminated, 0, "Completed", "12")
			for _, n := range []string{"one", "two"} {
				s := status(p, true, n)
				if s == nil {
					t.Fatalf("no init container status %s: %+v", n, p.Status.InitContainerStatuses)
				}
				terminated(t, "init "+n, s.State.Terminated, 0, "Completed", "")
				if !s.Ready {
					t.Errorf("init %s: ready false, want true once completed", n)
				}
			}
			if c := condition(p, v1.PodInitialized); c != v1.ConditionTrue {
				t.Errorf("Initialized %s, want True", c)
			}
		},
	},
	{
		name: "init-failure-never-fails-pod",
		pod: func(p *v1.Pod, _ int) {
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			p.Spec.InitContainers = []v1.Container{{Name: "one", Image: critest.BusyBox}}
			shell(&p.Spec.InitContainers[0], "exit 4")
			shell(&p.Spec.Containers[0], "exit 0")
		},
		check: func(t *testing.T, a *testAgent, p *v1.Pod) {
			p = a.wait(t, p, "Failed", phase(v1.PodFailed))
			terminated(t, "init one", status(p, true, "one").State.Terminated, 4, "Error", "")
			if w := mainStatus(p).State.Waiting; w == nil || w.Reason != "PodInitializing" {
				t.Errorf("main: %+v, want Waiting PodInitializing (never started)", mainStatus(p).State)
			}
			if c := condition(p, v1.PodInitialized); c != v1.ConditionFalse {
				t.Errorf("Initialized %s, want False", c)
			}
		},
	},
	{
		name: "init-failure-onfailure-retries",
		pod: func(p *v1.Pod, _ int) {
			p.Spec.RestartPolicy = v1.RestartPolicyOnFailure
			p.Spec.InitContainers = []v1.Container{{Name: "one", Image: critest.BusyBox}}
			shell(&p.Spec.InitContainers[0], "exit 4")
			shell(&p.Spec.Containers[0], "exit 0")
		},
		check: func(t *testing.T, a *testAgent, p *v1.Pod) {
			p = a.wait(t, p, "an init restart", restarted(true, "one"))
			terminated(t, "init one lastState", status(p, true, "one").LastTerminationState.Terminated, 4, "Error", "")
			if p.Status.Phase != v1.PodPending {
				t.Errorf("phase %s, want Pending", p.Status.Phase)
			}
			if w := mainStatus(p).State.Waiting; w == nil || w.Reason != "PodInitializing" {
				t.Errorf("main: %+v, want Waiting PodInitializing", mainStatus(p).State)
			}
		},
	},
	{
		name: "sidecar-starts-first-and-stops-last",
		pod: func(p *v1.Pod, _ int) {
			always := v1.ContainerRestartPolicyAlways
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			p.Spec.InitContainers = []v1.Container{{Name: "sidecar", Image: critest.BusyBox, RestartPolicy: &always,
				StartupProbe: execProbe("test -f /kite-lifecycle-shared/up")}}
			p.Spec.InitContainers[0].StartupProbe.FailureThreshold = 60
			shell(&p.Spec.InitContainers[0], "sleep 1; echo -n up > /kite-lifecycle-shared/up; "+trapLoop)
			shell(&p.Spec.Containers[0], "cat /kite-lifecycle-shared/up > /dev/termination-log; sleep 2")
			sharedDir(p)
		},
		check: func(t *testing.T, a *testAgent, p *v1.Pod) {
			// The sidecar runs beside the main container (the pod is
			// Running with both), then is stopped when it ends.
			a.wait(t, p, "both running", func(p *v1.Pod) bool {
				s, m := status(p, true, "sidecar"), mainStatus(p)
				return s != nil && m != nil && s.State.Running != nil && m.State.Running != nil && s.Started != nil && *s.Started
			})
			p = a.wait(t, p, "Succeeded", phase(v1.PodSucceeded))
			terminated(t, "main", mainStatus(p).State.Terminated, 0, "Completed", "up")
			if s := status(p, true, "sidecar"); s == nil || s.State.Terminated == nil || s.RestartCount != 0 {
				t.Errorf("sidecar %+v, want terminated (stopped after main), no restart", s)
			}
		},
	},
	{
		name: "liveness-exec-prestop-then-restart",
		pod: func(p *v1.Pod, _ int) {
			c := &p.Spec.Containers[0]
			shell(c, trapLoop)
			c.LivenessProbe = execProbe("exit 1")
			c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "echo -n prestop > /dev/termination-log"}}}}
		},
		check: func(t *testing.T, a *testAgent, p *v1.Pod) {
			p = a.wait(t, p, "a restart", restarted(false, "main"))
			terminated(t, "lastState", mainStatus(p).LastTerminationState.Terminated, 7, "Error", "prestop")
			a.waitEvent(t, p, "Killing", "Container main failed liveness probe, will be restarted")
			a.waitEvent(t, p, "Unhealthy", "Liveness probe failed")
		},
	},
	{
		name: "liveness-grace-ends-in-sigkill",
		pod: func(p *v1.Pod, _ int) {
			grace := int64(2)
			p.Spec.TerminationGracePeriodSeconds = &grace
			c := &p.Spec.Containers[0]
			shell(c, ignoreTermLoop)
			c.LivenessProbe = execProbe("exit 1")
		},
		check: func(t *testing.T, a *testAgent, p *v1.Pod) {
			p = a.wait(t, p, "a restart", restarted(false, "main"))
			tm := mainStatus(p).LastTerminationState.Terminated
			terminated(t, "lastState", tm, 137, "Error", "")
		},
	},
	{
		name: "liveness-http-failure-restarts",
		pod: func(p *v1.Pod, port int) {
			c := &p.Spec.Containers[0]
			shell(c, fmt.Sprintf(`d=/tmp/www-$POD_UID; mkdir -p $d; echo ok > $d/healthz; (sleep 3; rm -f $d/healthz) & exec busybox httpd -f -p 127.0.0.1:%d -h $d`, port))
			c.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt(port), Host: "127.0.0.1"}},
				PeriodSeconds: 1, FailureThreshold: 1, TimeoutSeconds: 5}
		},
		check: func(t *testing.T, a *testAgent, p *v1.Pod) {
			p = a.wait(t, p, "a restart", restarted(false, "main"))
			a.waitEvent(t, p, "Unhealthy", "Liveness probe failed: HTTP probe failed with statuscode: 404")
			a.waitEvent(t, p, "Killing", "Container main failed liveness probe, will be restarted")
		},
	},
	{
		name: "readiness-http-follows-the-server",
		pod: func(p *v1.Pod, port int) {
			c := &p.Spec.Containers[0]
			shell(c, fmt.Sprintf(`d=/tmp/www-$POD_UID; mkdir -p $d; echo ok > $d/ready; exec busybox httpd -f -p 127.0.0.1:%d -h $d`, port))
			c.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt(port), Host: "127.0.0.1"}},
				PeriodSeconds: 1, FailureThreshold: 1, TimeoutSeconds: 5}
			// A TCP liveness probe on the same server passes throughout.
			c.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt(port), Host: "127.0.0.1"}},
				PeriodSeconds: 1, FailureThreshold: 3, TimeoutSeconds: 5}
		},
		check: func(t *testing.T, a *testAgent, p *v1.Pod) {
			p = a.wait(t, p, "Ready", func(p *v1.Pod) bool { return condition(p, v1.PodReady) == v1.ConditionTrue })
			if out, err := a.exec(t, p, "sh", "-c", "rm /tmp/www-$POD_UID/ready && echo removed"); err != nil || out != "removed\n" {
				t.Fatalf("exec rm: %q, %v", out, err)
			}
			p = a.wait(t, p, "not Ready", func(p *v1.Pod) bool {
				return condition(p, v1.PodReady) == v1.ConditionFalse && condition(p, v1.ContainersReady) == v1.ConditionFalse
			})
			if s := mainStatus(p); s.Ready || s.RestartCount != 0 || s.State.Running == nil {
				t.Errorf("main %+v, want running, not ready, never restarted (readiness does not restart)", s)
			}
		},
	},
	{
		name: "liveness-tcp-failure-restarts",
		pod: func(p *v1.Pod, port int) {
			c := &p.Spec.Containers[0]
			shell(c, trapLoop)
			c.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt(port), Host: "127.0.0.1"}},
				PeriodSeconds: 1, FailureThreshold: 1, TimeoutSeconds: 1}
		},
		check: func(t *testing.T, a *testAgent, p *v1.Pod) {
			p = a.wait(t, p, "a restart", restarted(false, "main"))
			terminated(t, "lastState", mainStatus(p).LastTerminationState.Terminated, 7, "Error", "")
			a.waitEvent(t, p, "Killing", "Container main failed liveness probe, will be restarted")
		},
	},
	{
		name: "startup-probe-gates-liveness",
		pod: func(p *v1.Pod, _ int) {
			c := &p.Spec.Containers[0]
			// Liveness would fail until the file exists; it must not run
			// before the startup probe has passed.
			shell(c, `f=/tmp/started-$POD_UID; trap 'rm -f $f; exit 7' TERM; sleep 3; touch $f; while :; do sleep 0.2; done`)
			c.StartupProbe = execProbe("test -f /tmp/started-$POD_UID")
			c.StartupProbe.FailureThreshold = 60
			c.LivenessProbe = execProbe("test -f /tmp/started-$POD_UID")
			c.ReadinessProbe = execProbe("test -f /tmp/started-$POD_UID")
		},
		check: func(t *testing.T, a *testAgent, p *v1.Pod) {
			p = a.wait(t, p, "Ready", func(p *v1.Pod) bool { return condition(p, v1.PodReady) == v1.ConditionTrue })
			if s := mainStatus(p); s.Started == nil || !*s.Started || s.RestartCount != 0 {
				t.Errorf("main started %v restarts %d, want started, no restart", s.Started, s.RestartCount)
			}
		},
	},
	{
		name: "startup-probe-failure-restarts",
		pod: func(p *v1.Pod, _ int) {
			c := &p.Spec.Containers[0]
			shell(c, trapLoop)
			c.StartupProbe = execProbe("exit 1")
			c.StartupProbe.FailureThreshold = 2
		},
		check: func(t *testing.T, a *testAgent, p *v1.Pod) {
			p = a.wait(t, p, "a restart", restarted(false, "main"))
			terminated(t, "lastState", mainStatus(p).LastTerminationState.Terminated, 7, "Error", "")
			a.waitEvent(t, p, "Killing", "Container main failed startup probe, will be restarted")
			if s := mainStatus(p); s.Ready || (s.Started != nil && *s.Started) {
				t.Errorf("main ready %v started %v, want neither", s.Ready, s.Started)
			}
		},
	},
	{
		name: "poststart-runs-before-running",
		pod: func(p *v1.Pod, _ int) {
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			c := &p.Spec.Containers[0]
			shell(c, `f=/tmp/poststart-$POD_UID; while [ ! -f $f ]; do sleep 0.1; done; cat $f > /dev/termination-log; rm -f $f`)
			c.Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "echo -n post > /tmp/poststart-$POD_UID"}}}}
		},
		check: func(t *testing.T, a *testAgent, p *v1.Pod) {
			p = a.wait(t, p, "Succeeded", phase(v1.PodSucceeded))
			terminated(t, "state", mainStatus(p).State.Terminated, 0, "Completed", "post")
		},
	},
	{
		name: "poststart-failure-kills",
		pod: func(p *v1.Pod, _ int) {
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			c := &p.Spec.Containers[0]
			// The hook fails only once the trap is set: a SIGTERM before it
			// ends the shell with 143 (seen under load 16).
			shell(c, `trap 'exit 7' TERM; touch /tmp/trapped-$POD_UID; while :; do sleep 0.2; done`)
			c.Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c",
				"while [ ! -f /tmp/trapped-$POD_UID ]; do sleep 0.05; done; rm -f /tmp/trapped-$POD_UID; echo nope; exit 1"}}}}
		},
		check: func(t *testing.T, a *testAgent, p *v1.Pod) {
			p = a.wait(t, p, "Failed", phase(v1.PodFailed))
			a.waitEvent(t, p, "FailedPostStartHook", "")
			terminated(t, "state", mainStatus(p).State.Terminated, 7, "Error", "")
		},
	},
	{
		name: "sidecar-restarts-under-never",
		pod: func(p *v1.Pod, _ int) {
			always := v1.ContainerRestartPolicyAlways
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			p.Spec.InitContainers = []v1.Container{{Name: "sidecar", Image: critest.BusyBox, RestartPolicy: &always}}
			shell(&p.Spec.InitContainers[0], "sleep 1; exit 5")
			shell(&p.Spec.Containers[0], trapLoop)
		},
		check: func(t *testing.T, a *testAgent, p *v1.Pod) {
			p = a.wait(t, p, "a sidecar restart", restarted(true, "sidecar"))
			terminated(t, "sidecar lastState", status(p, true, "sidecar").LastTerminationState.Terminated, 5, "Error", "")
			if m := mainStatus(p); m == nil || m.RestartCount != 0 || p.Status.Phase != v1.PodRunning {
				t.Errorf("main %+v phase %s, want running on, Running", m, p.Status.Phase)
			}
		},
	},
	{
		name: "active-deadline-fails-the-pod",
		pod: func(p *v1.Pod, _ int) {
			deadline := int64(3)
			p.Spec.ActiveDeadlineSeconds = &deadline
			shell(&p.Spec.Containers[0], trapLoop)
		},
		check: func(t *testing.T, a *testAgent, p *v1.Pod) {
			p = a.wait(t, p, "Failed", phase(v1.PodFailed))
			if p.Status.Reason != "DeadlineExceeded" || p.Status.Message != "Pod was active on the node longer than the specified deadline" {
				t.Errorf("reason %q message %q, want DeadlineExceeded and the kubelet's message", p.Status.Reason, p.Status.Message)
			}
			p = a.wait(t, p, "main terminated", func(p *v1.Pod) bool { return mainStatus(p).State.Terminated != nil })
			terminated(t, "state", mainStatus(p).State.Terminated, 7, "Error", "")
		},
	},
	{
		name: "active-deadline-set-by-an-update",
		pod: func(p *v1.Pod, _ int) {
			// Exits 0 on SIGTERM, as the pause image of the conformance
			// test: the pod stays Failed all the same.
			shell(&p.Spec.Containers[0], `trap 'exit 0' TERM; while :; do sleep 0.2; done`)
		},
		check: func(t *testing.T, a *testAgent, p *v1.Pod) {
			p = a.wait(t, p, "Running", running)
			deadline := int64(2)
			p.Spec.ActiveDeadlineSeconds = &deadline
			if _, err := a.cs.CoreV1().Pods(p.Namespace).Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			p = a.wait(t, p, "Failed", phase(v1.PodFailed))
			p = a.wait(t, p, "main terminated", func(p *v1.Pod) bool { return mainStatus(p).State.Terminated != nil })
			<-timeAfter(1000) // the final status, after the container's exit
			p = a.wait(t, p, "Failed still", phase(v1.PodFailed))
			if p.Status.Reason != "DeadlineExceeded" {
				t.Errorf("reason %q, want DeadlineExceeded", p.Status.Reason)
			}
		},
	},
	{
		name: "observed-generation-follows-updates",
		pod: func(p *v1.Pod, _ int) {
			shell(&p.Spec.Containers[0], trapLoop)
		},
		check: func(t *testing.T, a *testAgent, p *v1.Pod) {
			observed := func(gen int64) func(*v1.Pod) bool {
				return func(p *v1.Pod) bool {
					if p.Status.ObservedGeneration != gen || len(p.Status.Conditions) == 0 {
						return false
					}
					for _, c := range p.Status.Conditions {
						if c.ObservedGeneration != gen {
							return false
						}
					}
					return true
				}
			}
			p = a.wait(t, p, "observedGeneration 1", observed(1))
			deadline := int64(3600)
			p.Spec.ActiveDeadlineSeconds = &deadline
			p, err := a.cs.CoreV1().Pods(p.Namespace).Update(context.Background(), p, metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Generation != 2 {
				t.Fatalf("generation %d after a spec update, want 2", p.Generation)
			}
			a.wait(t, p, "observedGeneration 2", observed(2))
		},
	},
	{
		name: "probe-grace-overrides-the-pods",
		pod: func(p *v1.Pod, _ int) {
			// A pod grace the test would see, yet short enough that a
			// container left behind at the test's end is gone before the
			// drain gives up.
			grace, probeGrace := int64(40), int64(1)
			p.Spec.TerminationGracePeriodSeconds = &grace
			c := &p.Spec.Containers[0]
			shell(c, ignoreTermLoop)
			c.LivenessProbe = execProbe("exit 1")
			c.LivenessProbe.TerminationGracePeriodSeconds = &probeGrace
		},
		check: func(t *testing.T, a *testAgent, p *v1.Pod) {
			p = a.wait(t, p, "a restart", restarted(false, "main"))
			terminated(t, "lastState", mainStatus(p).LastTerminationState.Terminated, 137, "Error", "")
			// Killed a second after the probe failed, not after the pod's 40 s.
			if tm := mainStatus(p).LastTerminationState.Terminated; tm != nil && tm.FinishedAt.Sub(tm.StartedAt.Time) > 25*time.Second {
				t.Errorf("the container ran %v before SIGKILL: the pod's grace, not the probe's 1 s", tm.FinishedAt.Sub(tm.StartedAt.Time))
			}
		},
	},
	{
		name: "prestop-http-on-delete",
		pod: func(p *v1.Pod, port int) {
			c := &p.Spec.Containers[0]
			shell(c, trapLoop)
			c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/prestop", Port: intstr.FromInt(port), Host: "127.0.0.1"}}}
		},
		check: func(t *testing.T, a *testAgent, p *v1.Pod) {
			p = a.wait(t, p, "Running", running)
			port := p.Spec.Containers[0].Lifecycle.PreStop.HTTPGet.Port.IntValue()
			hits := make(chan string, 1)
			srv := &http.Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case hits <- r.URL.Path:
				default:
				}
			})}
			l, err := net.Listen("tcp", srv.Addr)
			if err != nil {
				t.Fatal(err)
			}
			go srv.Serve(l)
			t.Cleanup(func() { srv.Close() })
			if err := a.cs.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			select {
			case path := <-hits:
				if path != "/prestop" {
					t.Errorf("preStop asked for %q, want /prestop", path)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("no preStop request within 60 s of the delete")
			}
		},
	},
	{
		name: "delete-waits-the-grace-then-kills",
		pod: func(p *v1.Pod, _ int) {
			grace := int64(3)
			p.Spec.TerminationGracePeriodSeconds = &grace
			shell(&p.Spec.Containers[0], ignoreTermLoop)
		},
		check: func(t *testing.T, a *testAgent, p *v1.Pod) {
			a.wait(t, p, "Running", running)
			start := time.Now()
			if err := a.cs.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			a.waitEvent(t, p, "Killing", "Stopping container main")
			for {
				_, err := a.cs.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					break
				}
				if time.Since(start) > 60*time.Second {
					t.Fatalf("pod still there 60 s after a delete with a grace of 3 s (%v)", err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if d := time.Since(start); d < 3*time.Second {
				t.Errorf("a container that ignores SIGTERM was gone after %v, before its grace of 3 s", d)
			}
		},
	},
}

// lifecycleRuntimes are the runtimes the table runs on.
var lifecycleRuntimes = []struct {
	name string
	opts func(t *testing.T) func(*agent.Options)
}{
	{"process", func(t *testing.T) func(*agent.Options) {
		if os.Geteuid() != 0 {
			// Memory limits (OOMKilled) need a writable cgroup, and volume
			// mounts a mount namespace: both are root's.
			t.Skip("skipped: the process runtime's cases need root (cgroups, mount namespaces)")
		}
		return func(o *agent.Options) { o.ContainerRuntime = "process" }
	}},
	{"containerd", func(t *testing.T) func(*agent.Options) {
		ep := critest.Runtime(t).Endpoint()
		return func(o *agent.Options) { o.ContainerRuntimeEndpoint = ep }
	}},
}

// TestLifecycle runs every case on both runtimes, each runtime with an
// agent on a node of its own, the cases in parallel.
func TestLifecycle(t *testing.T) {
	for _, rt := range lifecycleRuntimes {
		t.Run(rt.name, func(t *testing.T) {
			a := startAgentWith(t, "lc-"+rt.name, t.TempDir(), rt.opts(t))
			// Before the agent stops (cleanups run last first): the
			// process runtime's containers outlive their agent, and would
			// write into the root directory as it is removed.
			t.Cleanup(func() { a.drain(t) })
			for _, tc := range lifecycleCases {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					port := freePort(t)
					p := a.pod(t, "p", func(p *v1.Pod) { tc.pod(p, port) })
					tc.check(t, a, p)
				})
			}
		})
	}
}

// drain deletes the node's pods gracefully and waits until the agent has
// stopped their containers and removed them from the API.
func (a *testAgent) drain(t *testing.T) {
	ctx := context.Background()
	one := int64(1)
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		list, err := a.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + a.node})
		if err != nil {
			t.Errorf("drain %s: %v", a.node, err)
			return
		}
		if len(list.Items) == 0 && a.processContainersExited() {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("drain %s: %d pods left after 90 s, or process containers still running", a.node, len(list.Items))
			return
		}
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil {
				a.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &one})
			}
		}
	}
}

// processContainersExited says whether every container of the process
// runtime under the agent's root has its exit recorded (exit.json); true
// for other runtimes.
func (a *testAgent) processContainersExited() bool {
	dirs, _ := filepath.Glob(filepath.Join(a.root, "runtime", "containers", "*"))
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "exit.json")); err != nil {
			return false
		}
	}
	return true
}
