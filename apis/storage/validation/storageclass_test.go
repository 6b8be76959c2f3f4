package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/apis/storage/defaults"
)

func TestValidateStorageClass(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*storagev1.StorageClass)
		want   []string
	}{
		{"defaulted is valid", func(*storagev1.StorageClass) {}, nil},
		{"provisioner required", func(sc *storagev1.StorageClass) { sc.Provisioner = "" }, []string{"provisioner: Required value"}},
		{"provisioner a qualified name", func(sc *storagev1.StorageClass) { sc.Provisioner = "a/b/c" }, []string{"provisioner: Invalid value: \"a/b/c\""}},
		{"Recycle is not for classes", func(sc *storagev1.StorageClass) { sc.ReclaimPolicy = ptr.To(corev1.PersistentVolumeReclaimRecycle) },
			[]string{`reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain"`}},
		{"unknown binding mode", func(sc *storagev1.StorageClass) { sc.VolumeBindingMode = ptr.To(storagev1.VolumeBindingMode("Later")) },
			[]string{`volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer"`}},
		{"empty parameter key", func(sc *storagev1.StorageClass) { sc.Parameters = map[string]string{"": "x"} },
			[]string{"parameters: Invalid value: \"\": field can not be empty."}},
		{"duplicate topology values", func(sc *storagev1.StorageClass) {
			sc.AllowedTopologies = []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
				{Key: "zone", Values: []string{"a", "a"}}}}}
		}, []string{"allowedTopologies[0].matchLabelExpressions[0].values[1]: Duplicate value: \"a\""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local-path"}, Provisioner: "rancher.io/local-path"}
			defaults.StorageClass(sc)
			tc.mutate(sc)
			errs := ValidateStorageClass(sc)
			if len(tc.want) == 0 && len(errs) > 0 {
				t.Fatalf("unexpected errors: %v", errs)
			}
			all := errs.ToAggregate()
			for _, w := range tc.want {
				if all == nil || !strings.Contains(all.Error(), w) {
					t.Errorf("errors %v\ndo not contain %q", all, w)
				}
			}
		})
	}
}

func TestValidateStorageClassUpdateKeepsProvisioningFields(t *testing.T) {
	old := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "c", ResourceVersion: "1"}, Provisioner: "p", Parameters: map[string]string{"a": "1"}}
	defaults.StorageClass(old)
	sc := old.DeepCopy()
	sc.Parameters["a"] = "2"
	sc.ReclaimPolicy = ptr.To(corev1.PersistentVolumeReclaimRetain)
	sc.AllowVolumeExpansion = ptr.To(true) // may change
	got := ValidateStorageClassUpdate(sc, old).ToAggregate()
	for _, w := range []string{"parameters: Invalid value", "reclaimPolicy: Invalid value", "field is immutable"} {
		if got == nil || !strings.Contains(got.Error(), w) {
			t.Errorf("errors %v\ndo not contain %q", got, w)
		}
	}
	if strings.Contains(got.Error(), "allowVolumeExpansion") {
		t.Errorf("allowVolumeExpansion refused: %v", got)
	}
}
