package api_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// TestPodSubresourceApplyOwnsOnlyWhatItMayChange: a server-side apply
// through pods/ephemeralcontainers or pods/resize that also names other
// fields (a label, a container's image) is recorded in managedFields
// with only what the subresource changes (upstream's reset fields
// filters: spec.ephemeralContainers; the containers' resources and
// resizePolicy), so its manager never comes to own, or conflict over,
// fields it cannot write.
func TestPodSubresourceApplyOwnsOnlyWhatItMayChange(t *testing.T) {
	ctx, cancel := contextWithTimeout(t, 30*time.Second)
	defer cancel()
	cs := kubernetes.NewForConfigOrDie(config(t))
	const ns = "pod-subresource-apply"
	createNamespace(t, cs, ns)
	const pod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"app":"a"}},"spec":{"nodeName":"nowhere","containers":[{"name":"c","image":"busybox","resources":{"requests":{"cpu":"100m"},"limits":{"cpu":"200m"}}}]}}`
	if _, err := cs.CoreV1().Pods(ns).Patch(ctx, "p", types.ApplyPatchType, []byte(pod), metav1.PatchOptions{FieldManager: "creator"}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		subresource, manager, body string
		// owned must be among the manager's fields, notOwned not.
		owned, notOwned []string
	}{
		{"ephemeralcontainers", "debugger",
			`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"debugged":"yes"}},"spec":{"containers":[{"name":"c","image":"busybox"}],"ephemeralContainers":[{"name":"dbg","image":"busybox","terminationMessagePolicy":"File","imagePullPolicy":"Always"}]}}`,
			[]string{`"f:ephemeralContainers"`, `"k:{\"name\":\"dbg\"}"`}, []string{`"f:labels"`, `"f:containers"`, `"f:image":{},"f:name":{},"f:resources"`}},
		{"resize", "resizer",
			`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"resized":"yes"}},"spec":{"containers":[{"name":"c","image":"busybox","resources":{"requests":{"cpu":"100m"},"limits":{"cpu":"300m"}}}]}}`,
			[]string{`"f:resources"`, `"f:limits"`}, []string{`"f:labels"`, `"f:image"`, `"f:ephemeralContainers"`}},
	}
	// Forced: the resize takes the CPU limit over from the creator.
	force := true
	for _, tc := range cases {
		t.Run(tc.subresource, func(t *testing.T) {
			got, err := cs.CoreV1().Pods(ns).Patch(ctx, "p", types.ApplyPatchType, []byte(tc.body), metav1.PatchOptions{FieldManager: tc.manager, Force: &force}, tc.subresource)
			if err != nil {
				t.Fatalf("apply through %s: %v", tc.subresource, err)
			}
			i := slices.IndexFunc(got.ManagedFields, func(e metav1.ManagedFieldsEntry) bool { return e.Manager == tc.manager })
			if i < 0 {
				t.Fatalf("no managedFields entry of %s: %+v", tc.manager, got.ManagedFields)
			}
			e := got.ManagedFields[i]
			fields := string(e.FieldsV1.Raw)
			if e.Subresource != tc.subresource || e.Operation != metav1.ManagedFieldsOperationApply {
				t.Errorf("entry %s %s; want Apply of %s", e.Operation, e.Subresource, tc.subresource)
			}
			for _, f := range tc.owned {
				if !strings.Contains(fields, f) {
					t.Errorf("%s's fields %s; want %s among them", tc.manager, fields, f)
				}
			}
			for _, f := range tc.notOwned {
				if strings.Contains(fields, f) {
					t.Errorf("%s's fields %s; want no %s (the subresource cannot change it)", tc.manager, fields, f)
				}
			}
			if len(got.Labels) != 1 {
				t.Errorf("labels %v after an apply through %s; want the creator's alone", got.Labels, tc.subresource)
			}
		})
	}
}
