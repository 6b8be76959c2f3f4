package table_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/registry/table"
)

// TestWorkloadStorageCells compares the cells of StatefulSets, DaemonSets,
// PersistentVolumes, PersistentVolumeClaims and StorageClasses with what
// upstream's printers print for the same objects (wide cells included).
func TestWorkloadStorageCells(t *testing.T) {
	fs := ptr.To(corev1.PersistentVolumeFilesystem)
	tests := []struct {
		name    string
		obj     runtime.Object
		columns []string
		want    []any
	}{
		{
			name: "statefulset two of three ready",
			obj: &appsv1.StatefulSet{ObjectMeta: meta("web"), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), Template: workloadTemplate},
				Status: appsv1.StatefulSetStatus{Replicas: 3, ReadyReplicas: 2}},
			columns: []string{"Name", "Ready", "Age", "Containers", "Images"},
			want:    []any{"web", "2/3", "3d", "a,b", "busybox,nginx:1.25"},
		},
		{
			name: "daemonset with node selector",
			obj: &appsv1.DaemonSet{ObjectMeta: meta("agent"), Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{NodeSelector: map[string]string{"kubernetes.io/os": "linux"}, Containers: workloadTemplate.Spec.Containers}}},
				Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, NumberReady: 2, UpdatedNumberScheduled: 1, NumberAvailable: 2}},
			columns: []string{"Name", "Desired", "Current", "Ready", "Up-to-date", "Available", "Node Selector", "Age", "Containers", "Images", "Selector"},
			want:    []any{"agent", int64(3), int64(3), int64(2), int64(1), int64(2), "kubernetes.io/os=linux", "3d", "a,b", "busybox,nginx:1.25", "app=agent"},
		},
		{
			name: "daemonset without node selector",
			obj:  &appsv1.DaemonSet{ObjectMeta: meta("ds")},
			want: []any{"ds", int64(0), int64(0), int64(0), int64(0), int64(0), "<none>", "3d", "", "", "<none>"},
		},
		{
			name: "bound persistent volume",
			obj: &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1", CreationTimestamp: ago(time.Hour)},
				Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
					AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod, corev1.ReadWriteOnce, corev1.ReadWriteOnce},
					PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete, StorageClassName: "local-path",
					ClaimRef: &corev1.ObjectReference{Namespace: "default", Name: "data-web-0"}, VolumeMode: fs},
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}},
			columns: []string{"Name", "Capacity", "Access Modes", "Reclaim Policy", "Status", "Claim", "StorageClass", "VolumeAttributesClass", "Reason", "Age", "VolumeMode"},
			want:    []any{"pv1", "1Gi", "RWO,RWOP", "Delete", "Bound", "default/data-web-0", "local-path", "<unset>", "", "60m", "Filesystem"},
		},
		{
			name: "persistent volume terminating, class from the beta annotation",
			obj: &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv2", CreationTimestamp: ago(time.Hour), DeletionTimestamp: ptr.To(ago(0)),
				Annotations: map[string]string{corev1.BetaStorageClassAnnotation: "old"}},
				Spec:   corev1.PersistentVolumeSpec{StorageClassName: "new"},
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeReleased, Reason: "gone"}},
			want: []any{"pv2", "0", "", "", "Terminating", "", "old", "<unset>", "gone", "60m", "<unset>"},
		},
		{
			name: "pending claim shows no capacity",
			obj: &corev1.PersistentVolumeClaim{ObjectMeta: meta("data-web-0"), Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("local-path"),
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}, VolumeMode: fs},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}},
			columns: []string{"Name", "Status", "Volume", "Capacity", "Access Modes", "StorageClass", "VolumeAttributesClass", "Age", "VolumeMode"},
			want:    []any{"data-web-0", "Pending", "", "", "", "local-path", "<unset>", "3d", "Filesystem"},
		},
		{
			name: "bound claim shows the volume's capacity",
			obj: &corev1.PersistentVolumeClaim{ObjectMeta: meta("c"), Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv1", VolumeAttributesClassName: ptr.To("gold")},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
					Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}}},
			want: []any{"c", "Bound", "pv1", "2Gi", "RWX", "", "gold", "3d", "<unset>"},
		},
		{
			name: "storage class alone is not marked default",
			obj: &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local-path", CreationTimestamp: ago(time.Hour),
				Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}}, Provisioner: "rancher.io/local-path",
				VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)},
			columns: []string{"Name", "Provisioner", "ReclaimPolicy", "VolumeBindingMode", "AllowVolumeExpansion", "Age"},
			want:    []any{"local-path", "rancher.io/local-path", "Delete", "WaitForFirstConsumer", false, "60m"},
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

// TestStorageClassListMarksTheEffectiveDefault: in a list, the newest of
// the classes annotated default (beta annotation too) is "(default)",
// the first by name among equally old ones; the others are not.
func TestStorageClassListMarksTheEffectiveDefault(t *testing.T) {
	sc := func(name string, created time.Duration, ann string) storagev1.StorageClass {
		m := metav1.ObjectMeta{Name: name, CreationTimestamp: ago(created)}
		if ann != "" {
			m.Annotations = map[string]string{ann: "true"}
		}
		return storagev1.StorageClass{ObjectMeta: m, Provisioner: "p"}
	}
	tests := []struct {
		name  string
		items []storagev1.StorageClass
		want  []string
	}{
		{"none annotated", []storagev1.StorageClass{sc("a", time.Hour, ""), sc("b", time.Minute, "")}, []string{"a", "b"}},
		{"newest annotated wins", []storagev1.StorageClass{sc("old", time.Hour, "storageclass.kubernetes.io/is-default-class"),
			sc("new", time.Minute, "storageclass.beta.kubernetes.io/is-default-class"), sc("plain", 0, "")}, []string{"old", "new (default)", "plain"}},
		{"equal age: first by name", []storagev1.StorageClass{sc("z", time.Hour, "storageclass.kubernetes.io/is-default-class"),
			sc("m", time.Hour, "storageclass.kubernetes.io/is-default-class")}, []string{"z", "m (default)"}},
	}
	c := conv()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tbl, err := c.Convert(&storagev1.StorageClassList{Items: tc.items}, table.ConvertOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range tbl.Rows {
				got = append(got, r.Cells[0].(string))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
		})
	}
}
