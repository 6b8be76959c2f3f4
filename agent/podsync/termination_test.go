package podsync

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/agent/runtime/process"
)

// TestTerminationMessage: the termination message is what the container
// wrote to terminationMessagePath, else (FallbackToLogsOnError and a
// failure) its log's tail as it was written, as conformance's "[sig-node]
// Container Runtime blackbox test on terminated container" checks.
func TestTerminationMessage(t *testing.T) {
	n := startNode(t, "node-termination", Options{})
	st, err := n.rt.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mounts := true
	for _, c := range st.Conditions {
		if c.Type == process.ConditionVolumeMounts && !c.Status {
			mounts = false
		}
	}
	for _, tc := range []struct {
		name        string
		script      string
		policy      v1.TerminationMessagePolicy
		path        string
		user        *int64
		needsMounts bool
		phase       v1.PodPhase
		want        string
	}{
		{name: "fallback: a failed container's log, no newline added", script: "echo -n DONE; exit 1",
			policy: v1.TerminationMessageFallbackToLogsOnError, phase: v1.PodFailed, want: "DONE"},
		{name: "fallback: a succeeded container has none", script: "echo DONE",
			policy: v1.TerminationMessageFallbackToLogsOnError, phase: v1.PodSucceeded, want: ""},
		{name: "fallback: the file wins over the log", script: "echo -n OK > /dev/termination-log; echo DONE; true",
			policy: v1.TerminationMessageFallbackToLogsOnError, needsMounts: true, phase: v1.PodSucceeded, want: "OK"},
		{name: "file: a failed container's file, not its log", script: "printf 'it broke' > /dev/termination-log; echo noise; exit 2",
			policy: v1.TerminationMessageReadFile, needsMounts: true, phase: v1.PodFailed, want: "it broke"},
		{name: "file: a non-default path written as a non-root user", script: "echo -n DONE > /dev/termination-custom-log",
			policy: v1.TerminationMessageReadFile, path: "/dev/termination-custom-log", user: ptr.To[int64](1000),
			needsMounts: true, phase: v1.PodSucceeded, want: "DONE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needsMounts && !mounts {
				t.Skip("the process runtime cannot mount on this host")
			}
			p := n.create(t, "termination", "", v1.RestartPolicyNever, tc.script, func(p *v1.Pod) {
				p.GenerateName = "msg-"
				c := &p.Spec.Containers[0]
				c.TerminationMessagePolicy = tc.policy
				c.TerminationMessagePath = "/dev/termination-log"
				if tc.path != "" {
					c.TerminationMessagePath = tc.path
				}
				if tc.user != nil {
					c.SecurityContext = &v1.SecurityContext{RunAsUser: tc.user}
				}
			})
			p = n.waitPod(t, p, string(tc.phase), func(p *v1.Pod) bool {
				return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
			})
			if p.Status.Phase != tc.phase || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Terminated == nil {
				t.Fatalf("phase %s, container statuses %+v; want %s and terminated", p.Status.Phase, p.Status.ContainerStatuses, tc.phase)
			}
			if got := p.Status.ContainerStatuses[0].State.Terminated.Message; got != tc.want {
				t.Errorf("termination message = %q, want %q", got, tc.want)
			}
		})
	}
}
