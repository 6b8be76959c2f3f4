package crd

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A write of ours stands in for the cached CRD until the watch brings
// that version or a newer one, and never for a CRD recreated under the
// same name.
func TestWritesStandInUntilTheWatchCatchesUp(t *testing.T) {
	crd := func(uid types.UID, rv string) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "a.example.com", UID: uid, ResourceVersion: rv}}
	}
	for _, tc := range []struct {
		name            string
		written, cached *apiextensionsv1.CustomResourceDefinition
		wantMine, kept  bool
	}{
		{"watch behind", crd("u1", "12"), crd("u1", "10"), true, true},
		{"watch caught up", crd("u1", "12"), crd("u1", "12"), false, false},
		{"watch ahead", crd("u1", "12"), crd("u1", "15"), false, false},
		{"recreated", crd("u1", "12"), crd("u2", "11"), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := writes{m: map[string]*apiextensionsv1.CustomResourceDefinition{}}
			w.put(tc.written)
			got := w.newer(tc.cached)
			if (got == tc.written) != tc.wantMine {
				t.Errorf("newer returned rv %s uid %s", got.ResourceVersion, got.UID)
			}
			if _, kept := w.m[tc.written.Name]; kept != tc.kept {
				t.Errorf("write kept: %v, want %v", kept, tc.kept)
			}
		})
	}
}
