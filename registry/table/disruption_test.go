package table_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/registry/table"
)

// TestDisruptionKindCells compares the cells of the disruption branch's
// kinds with what upstream's printers print for the same objects.
func TestDisruptionKindCells(t *testing.T) {
	tests := []struct {
		name    string
		obj     runtime.Object
		columns []string
		want    []any
	}{
		{
			name:    "pdb with minAvailable as a number",
			obj:     &policyv1.PodDisruptionBudget{ObjectMeta: meta("web"), Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1))}, Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 2}},
			columns: []string{"Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"},
			want:    []any{"web", "1", "N/A", int64(2), "3d"},
		},
		{
			name: "pdb with maxUnavailable as a percentage",
			obj:  &policyv1.PodDisruptionBudget{ObjectMeta: meta("db"), Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromString("25%"))}},
			want: []any{"db", "N/A", "25%", int64(0), "3d"},
		},
		{
			name: "replication controller",
			obj: &corev1.ReplicationController{ObjectMeta: meta("rc"), Spec: corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](3), Selector: map[string]string{"app": "web"},
				Template: &workloadTemplate}, Status: corev1.ReplicationControllerStatus{Replicas: 2, ReadyReplicas: 1}},
			columns: []string{"Name", "Desired", "Current", "Ready", "Age", "Containers", "Images", "Selector"},
			want:    []any{"rc", int64(3), int64(2), int64(1), "3d", "a,b", "busybox,nginx:1.25", "app=web"},
		},
		{
			name:    "pod template",
			obj:     &corev1.PodTemplate{ObjectMeta: meta("t"), Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: workloadTemplate.Spec}},
			columns: []string{"Name", "Containers", "Images", "Pod Labels"},
			want:    []any{"t", "a,b", "busybox,nginx:1.25", "app=web"},
		},
	}
	c := table.New(table.Options{Now: func() time.Time { return now }})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tbl, err := c.Convert(tc.obj, table.ConvertOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, tbl.Rows[0].Cells); diff != "" {
				t.Errorf("cells (-upstream +kite):\n%s", diff)
			}
			var names []string
			for _, d := range tbl.ColumnDefinitions {
				names = append(names, d.Name)
			}
			if len(names) != len(tc.want) {
				t.Errorf("%d columns for %d cells", len(names), len(tc.want))
			}
			if tc.columns != nil {
				if diff := cmp.Diff(tc.columns, names); diff != "" {
					t.Errorf("columns (-upstream +kite):\n%s", diff)
				}
			}
		})
	}
}
