package table_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/registry/table"
)

var workloadTemplate = corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
	{Name: "a", Image: "busybox"}, {Name: "b", Image: "nginx:1.25"}}}}

func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: ago(3 * 24 * time.Hour)}
}

// TestKindCells compares cells with what upstream prints for the same
// objects (every cell, -o wide ones included, as the server sends them).
func TestKindCells(t *testing.T) {
	tests := []struct {
		name    string
		obj     runtime.Object
		columns []string
		want    []any
	}{
		{
			name:    "node ready with roles",
			obj:     &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: ago(3 * 24 * time.Hour), Labels: map[string]string{"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "master", "node-role.kubernetes.io/": "x"}}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}, {Type: corev1.NodeReady, Status: corev1.ConditionTrue}}, NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", OSImage: "Debian", KernelVersion: "6.1", ContainerRuntimeVersion: "kite://0.1"}, Addresses: []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "n1"}, {Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}}},
			columns: []string{"Name", "Status", "Roles", "Age", "Version", "Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"},
			want:    []any{"n1", "Ready", "control-plane,master", "3d", "v1.37.2", "10.0.0.1", "<none>", "Debian", "6.1", "kite://0.1"},
		},
		{
			name: "node not ready and cordoned",
			obj:  &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2", CreationTimestamp: ago(90 * time.Second)}, Spec: corev1.NodeSpec{Unschedulable: true}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}}},
			want: []any{"n2", "NotReady,SchedulingDisabled", "<none>", "90s", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"},
		},
		{
			name: "node without conditions",
			obj:  &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n3", CreationTimestamp: ago(time.Hour)}},
			want: []any{"n3", "Unknown", "<none>", "60m", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"},
		},
		{
			name:    "namespace terminating",
			obj:     &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", CreationTimestamp: ago(400 * 24 * time.Hour)}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
			columns: []string{"Name", "Status", "Age"},
			want:    []any{"ns", "Terminating", "400d"},
		},
		{
			name:    "configmap counts data and binaryData",
			obj:     &corev1.ConfigMap{ObjectMeta: meta("cm"), Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"c": {1}}},
			columns: []string{"Name", "Data", "Age"},
			want:    []any{"cm", int64(3), "3d"},
		},
		{
			name:    "secret",
			obj:     &corev1.Secret{ObjectMeta: meta("s"), Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"k": nil}},
			columns: []string{"Name", "Type", "Data", "Age"},
			want:    []any{"s", "Opaque", int64(1), "3d"},
		},
		{
			name:    "serviceaccount",
			obj:     &corev1.ServiceAccount{ObjectMeta: meta("default")},
			columns: []string{"Name", "Secrets", "Age"},
			want:    []any{"default", int64(0), "3d"},
		},
		{
			name:    "lease with holder",
			obj:     &coordinationv1.Lease{ObjectMeta: meta("n1"), Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("n1")}},
			columns: []string{"Name", "Holder", "Age"},
			want:    []any{"n1", "n1", "3d"},
		},
		{
			name: "lease without holder",
			obj:  &coordinationv1.Lease{ObjectMeta: meta("free")},
			want: []any{"free", "", "3d"},
		},
		{
			name:    "service NodePort",
			obj:     &corev1.Service{ObjectMeta: meta("web"), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIPs: []string{"10.96.0.10"}, Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}, {Port: 53, Protocol: corev1.ProtocolUDP}}, Selector: map[string]string{"app": "web"}}},
			columns: []string{"Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"},
			want:    []any{"web", "NodePort", "10.96.0.10", "<none>", "80:30080/TCP,53/UDP", "3d", "app=web"},
		},
		{
			name: "service LoadBalancer pending, no ports, no selector",
			obj:  &corev1.Service{ObjectMeta: meta("lb"), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}},
			want: []any{"lb", "LoadBalancer", "<none>", "<pending>", "<none>", "3d", "<none>"},
		},
		{
			name: "service LoadBalancer with ingress and external IPs",
			obj:  &corev1.Service{ObjectMeta: meta("lb"), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalIPs: []string{"1.1.1.1"}}, Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "5.5.5.5"}, {Hostname: "lb.example"}}}}},
			want: []any{"lb", "LoadBalancer", "<none>", "5.5.5.5,lb.example,1.1.1.1", "<none>", "3d", "<none>"},
		},
		{
			name: "service ExternalName",
			obj:  &corev1.Service{ObjectMeta: meta("ext"), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example"}},
			want: []any{"ext", "ExternalName", "<none>", "db.example", "<none>", "3d", "<none>"},
		},
		{
			name: "core event with count and source",
			obj: &corev1.Event{ObjectMeta: meta("web.1"), InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web", FieldPath: "spec.containers{c}"},
				Reason: "Pulled", Message: "  pulled image  \n", Type: "Normal", Count: 3, FirstTimestamp: ago(time.Hour), LastTimestamp: ago(5 * time.Minute),
				Source: corev1.EventSource{Component: "kubelet", Host: "n1"}},
			columns: []string{"Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen", "Count", "Name"},
			want:    []any{"5m", "Normal", "Pulled", "pod/web", "spec.containers{c}", "kubelet, n1", "pulled image", "60m", int64(3), "web.1"},
		},
		{
			name: "core event of the new API shape: eventTime, reporting controller, no count",
			obj: &corev1.Event{ObjectMeta: meta("e2"), InvolvedObject: corev1.ObjectReference{Kind: "Node"}, Reason: "Starting", Type: "Normal",
				EventTime: metav1.NewMicroTime(now.Add(-30 * time.Second)), ReportingController: "kite-agent"},
			want: []any{"30s", "Normal", "Starting", "node", "", "kite-agent", "", "30s", int64(1), "e2"},
		},
		{
			name: "events.k8s.io event with series",
			obj: &eventsv1.Event{ObjectMeta: meta("e3"), Regarding: corev1.ObjectReference{Kind: "Pod", Name: "web"}, Reason: "BackOff", Note: "back-off", Type: "Warning",
				EventTime: metav1.NewMicroTime(now.Add(-2 * time.Hour)), ReportingController: "kubelet", ReportingInstance: "n1",
				Series: &eventsv1.EventSeries{Count: 7, LastObservedTime: metav1.NewMicroTime(now.Add(-3 * time.Minute))}},
			columns: []string{"Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen", "Count", "Name"},
			want:    []any{"3m", "Warning", "BackOff", "pod/web", "", "kubelet, n1", "back-off", "120m", int64(7), "e3"},
		},
		{
			name:    "other kinds get upstream's default table",
			obj:     &corev1.Binding{ObjectMeta: meta("d")},
			columns: []string{"Name", "Created At"},
			want:    []any{"d", "2026-02-26T12:00:00Z"},
		},
		{
			name: "deployment",
			obj: &appsv1.Deployment{ObjectMeta: meta("web"), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Template: workloadTemplate},
				Status: appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 1}},
			columns: []string{"Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"},
			want:    []any{"web", "2/3", int64(3), int64(1), "3d", "a,b", "busybox,nginx:1.25", "app=web"},
		},
		{
			name: "replicaset",
			obj: &appsv1.ReplicaSet{ObjectMeta: meta("web-1"), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Template: workloadTemplate},
				Status: appsv1.ReplicaSetStatus{Replicas: 2, ReadyReplicas: 1}},
			columns: []string{"Name", "Desired", "Current", "Ready", "Age", "Containers", "Images", "Selector"},
			want:    []any{"web-1", int64(3), int64(2), int64(1), "3d", "a,b", "busybox,nginx:1.25", "app=web"},
		},
		{
			name: "controllerrevision of a daemonset",
			obj: &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "ds-1", CreationTimestamp: ago(time.Hour),
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", Controller: ptr.To(true)}}}, Revision: 2},
			columns: []string{"Name", "Controller", "Revision", "Age"},
			want:    []any{"ds-1", "daemonset.apps/ds", int64(2), "60m"},
		},
		{
			name: "complete job",
			obj: &batchv1.Job{ObjectMeta: meta("pi"), Spec: batchv1.JobSpec{Completions: ptr.To[int32](2), Template: workloadTemplate,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "u"}}},
				Status: batchv1.JobStatus{Succeeded: 2, StartTime: ptr.To(ago(time.Hour)), CompletionTime: ptr.To(ago(time.Hour - 75*time.Second)),
					Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}},
			columns: []string{"Name", "Status", "Completions", "Duration", "Age", "Containers", "Images", "Selector"},
			want:    []any{"pi", "Complete", "2/2", "75s", "3d", "a,b", "busybox,nginx:1.25", "batch.kubernetes.io/controller-uid=u"},
		},
		{
			name: "running job without completions, parallel",
			obj:  &batchv1.Job{ObjectMeta: meta("w"), Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](3)}},
			want: []any{"w", "Running", "0/1 of 3", "", "3d", "", "", "<none>"},
		},
		{
			name: "cronjob",
			obj: &batchv1.CronJob{ObjectMeta: meta("c"), Spec: batchv1.CronJobSpec{Schedule: "*/5 * * * *", Suspend: ptr.To(false),
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: workloadTemplate}}},
				Status: batchv1.CronJobStatus{Active: []corev1.ObjectReference{{Name: "c-1"}}, LastScheduleTime: ptr.To(ago(2 * time.Minute))}},
			columns: []string{"Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age", "Containers", "Images", "Selector"},
			want:    []any{"c", "*/5 * * * *", "<none>", "False", int64(1), "2m", "3d", "a,b", "busybox,nginx:1.25", "<none>"},
		},
	}
	c := conv()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tbl, err := c.Convert(tc.obj, table.ConvertOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, tbl.Rows[0].Cells); diff != "" {
				t.Errorf("cells (-upstream +kite):\n%s", diff)
			}
			if len(tbl.ColumnDefinitions) != len(tc.want) {
				t.Errorf("%d columns for %d cells", len(tbl.ColumnDefinitions), len(tc.want))
			}
			if tc.columns != nil {
				var names []string
				for _, d := range tbl.ColumnDefinitions {
					names = append(names, d.Name)
				}
				if diff := cmp.Diff(tc.columns, names); diff != "" {
					t.Errorf("columns (-upstream +kite):\n%s", diff)
				}
			}
		})
	}
}
