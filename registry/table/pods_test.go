package table_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/registry/table"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

func conv() *table.Convertor { return table.New(table.Options{Now: func() time.Time { return now }}) }

func running(ready bool) corev1.ContainerStatus {
	return corev1.ContainerStatus{Ready: ready, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
}

func waiting(reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
}

func terminated(reason string, exit, signal int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: exit, Signal: signal}}}
}

func pod(containers, inits int, mutate func(p *corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", CreationTimestamp: ago(5 * time.Hour)}}
	for range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "c" + string(rune('0'+len(p.Spec.Containers)))})
	}
	for range inits {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "i" + string(rune('0'+len(p.Spec.InitContainers)))})
	}
	mutate(p)
	return p
}

// TestPodCells compares cells with what upstream's printPod prints for
// the same pod (cases mirror pkg/printers/internalversion/printers_test.go).
func TestPodCells(t *testing.T) {
	tests := []struct {
		name      string
		pod       *corev1.Pod
		want      []any
		completed string // RowCompleted condition reason, if any
	}{
		{
			name: "running, one of two ready",
			pod: pod(2, 0, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodRunning
				p.Status.ContainerStatuses = []corev1.ContainerStatus{running(true), running(false)}
			}),
			want: []any{"web", "1/2", "Running", "0", "5h", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "restarts with the time of the last one",
			pod: pod(2, 0, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodRunning
				a, b := running(true), running(true)
				a.RestartCount, b.RestartCount = 3, 2
				a.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{FinishedAt: ago(time.Hour)}
				b.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{FinishedAt: ago(10 * time.Minute)}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{a, b}
			}),
			want: []any{"web", "2/2", "Running", "5 (10m ago)", "5h", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "restarts without a termination time print the count only",
			pod: pod(1, 0, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodRunning
				c := running(true)
				c.RestartCount = 4
				p.Status.ContainerStatuses = []corev1.ContainerStatus{c}
			}),
			want: []any{"web", "1/1", "Running", "4", "5h", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "pending, no statuses yet",
			pod:  pod(1, 0, func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }),
			want: []any{"web", "0/1", "Pending", "0", "5h", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "waiting reason wins over phase",
			pod: pod(1, 0, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Status.ContainerStatuses = []corev1.ContainerStatus{waiting("ContainerCreating")}
			}),
			want: []any{"web", "0/1", "ContainerCreating", "0", "5h", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "first container's reason wins (walked last to first)",
			pod: pod(2, 0, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodRunning
				p.Status.ContainerStatuses = []corev1.ContainerStatus{waiting("CrashLoopBackOff"), waiting("ImagePullBackOff")}
			}),
			want: []any{"web", "0/2", "CrashLoopBackOff", "0", "5h", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "terminated without reason shows exit code",
			pod: pod(1, 0, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodRunning
				p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("", 2, 0)}
			}),
			want: []any{"web", "0/1", "ExitCode:2", "0", "5h", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "terminated by signal",
			pod: pod(1, 0, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodRunning
				p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("", 137, 9)}
			}),
			want: []any{"web", "0/1", "Signal:9", "0", "5h", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "succeeded",
			pod: pod(1, 0, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodSucceeded
				p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("Completed", 0, 0)}
			}),
			want:      []any{"web", "0/1", "Completed", "0", "5h", "<none>", "<none>", "<none>", "<none>"},
			completed: "Succeeded",
		},
		{
			name: "failed with pod reason",
			pod: pod(1, 0, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodFailed
				p.Status.Reason = "Evicted"
			}),
			want:      []any{"web", "0/1", "Evicted", "0", "5h", "<none>", "<none>", "<none>", "<none>"},
			completed: "Failed",
		},
		{
			name: "completed container next to a running one is Running when ready",
			pod: pod(2, 0, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodRunning
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("Completed", 0, 0), running(true)}
			}),
			want: []any{"web", "1/2", "Running", "0", "5h", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "completed container next to a running one is NotReady otherwise",
			pod: pod(2, 0, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodRunning
				p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("Completed", 0, 0), running(true)}
			}),
			want: []any{"web", "1/2", "NotReady", "0", "5h", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "deleting a running pod is Terminating",
			pod: pod(1, 0, func(p *corev1.Pod) {
				p.DeletionTimestamp = ptr.To(ago(time.Second))
				p.Status.Phase = corev1.PodRunning
				p.Status.ContainerStatuses = []corev1.ContainerStatus{running(true)}
			}),
			want: []any{"web", "1/1", "Terminating", "0", "5h", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "deleting a succeeded pod keeps its status",
			pod: pod(1, 0, func(p *corev1.Pod) {
				p.DeletionTimestamp = ptr.To(ago(time.Second))
				p.Status.Phase = corev1.PodSucceeded
				p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("Completed", 0, 0)}
			}),
			want:      []any{"web", "0/1", "Completed", "0", "5h", "<none>", "<none>", "<none>", "<none>"},
			completed: "Succeeded",
		},
		{
			name: "deleting a pod on a lost node is Unknown",
			pod: pod(1, 0, func(p *corev1.Pod) {
				p.DeletionTimestamp = ptr.To(ago(time.Second))
				p.Status.Phase = corev1.PodRunning
				p.Status.Reason = "NodeLost"
			}),
			want: []any{"web", "0/1", "Unknown", "0", "5h", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "first init container running",
			pod: pod(1, 2, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{running(false), waiting("PodInitializing")}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{waiting("PodInitializing")}
			}),
			want: []any{"web", "0/1", "Init:0/2", "0", "5h", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "second init container running after the first succeeded",
			pod: pod(1, 2, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{terminated("Completed", 0, 0), running(false)}
			}),
			want: []any{"web", "0/1", "Init:1/2", "0", "5h", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "init container failing, its restarts counted",
			pod: pod(1, 1, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				ic := waiting("CrashLoopBackOff")
				ic.RestartCount = 4
				ic.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{FinishedAt: ago(2 * time.Minute)}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{ic}
			}),
			want: []any{"web", "0/1", "Init:CrashLoopBackOff", "4 (2m ago)", "5h", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "init container exited non-zero",
			pod: pod(1, 1, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{terminated("", 3, 0)}
			}),
			want: []any{"web", "0/1", "Init:ExitCode:3", "0", "5h", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "running sidecar counts as a container",
			pod: pod(1, 1, func(p *corev1.Pod) {
				p.Spec.InitContainers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
				p.Status.Phase = corev1.PodRunning
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}}
				sc := running(true)
				sc.Name = "i0"
				sc.Started = ptr.To(true)
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{sc}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{running(true)}
			}),
			want: []any{"web", "2/2", "Running", "0", "5h", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "scheduling gated",
			pod: pod(1, 0, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "SchedulingGated"}}
			}),
			want: []any{"web", "0/1", "SchedulingGated", "0", "5h", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "wide columns: IP, node, nominated node, readiness gates",
			pod: pod(1, 0, func(p *corev1.Pod) {
				p.Spec.NodeName = "node-1"
				p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "a"}, {ConditionType: "b"}}
				p.Status.Phase = corev1.PodRunning
				p.Status.PodIP = "10.0.0.9" // upstream prints podIPs[0], not podIP
				p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.5"}, {IP: "fd00::5"}}
				p.Status.NominatedNodeName = "node-2"
				p.Status.Conditions = []corev1.PodCondition{{Type: "a", Status: corev1.ConditionTrue}, {Type: "b", Status: corev1.ConditionFalse}}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{running(true)}
			}),
			want: []any{"web", "1/1", "Running", "0", "5h", "10.0.0.5", "node-1", "node-2", "1/2"},
		},
		{
			name: "no creation timestamp",
			pod: pod(1, 0, func(p *corev1.Pod) {
				p.CreationTimestamp = metav1.Time{}
				p.Status.Phase = corev1.PodPending
			}),
			want: []any{"web", "0/1", "Pending", "0", "<unknown>", "<none>", "<none>", "<none>", "<none>"},
		},
	}
	c := conv()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tbl, err := c.Convert(tc.pod, table.ConvertOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(tbl.Rows) != 1 {
				t.Fatalf("%d rows", len(tbl.Rows))
			}
			if diff := cmp.Diff(tc.want, tbl.Rows[0].Cells); diff != "" {
				t.Errorf("cells (-upstream +kite):\n%s", diff)
			}
			var gotCompleted string
			for _, c := range tbl.Rows[0].Conditions {
				if c.Type == metav1.RowCompleted && c.Status == metav1.ConditionTrue {
					gotCompleted = c.Reason
				}
			}
			if gotCompleted != tc.completed {
				t.Errorf("Completed condition %q, want %q", gotCompleted, tc.completed)
			}
		})
	}
}

func TestPodColumns(t *testing.T) {
	tbl, err := conv().Convert(&corev1.PodList{}, table.ConvertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type col struct {
		Name, Type, Format string
		Priority           int32
	}
	var got []col
	for _, d := range tbl.ColumnDefinitions {
		if d.Description == "" {
			t.Errorf("column %q has no description", d.Name)
		}
		got = append(got, col{d.Name, d.Type, d.Format, d.Priority})
	}
	want := []col{
		{"Name", "string", "name", 0}, {"Ready", "string", "", 0}, {"Status", "string", "", 0},
		{"Restarts", "string", "", 0}, {"Age", "string", "", 0}, {"IP", "string", "", 1},
		{"Node", "string", "", 1}, {"Nominated Node", "string", "", 1}, {"Readiness Gates", "string", "", 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("columns (-upstream +kite):\n%s", diff)
	}
}
