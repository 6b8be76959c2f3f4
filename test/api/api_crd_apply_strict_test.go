package api_test

import (
	"cmp"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

// TestCustomResourceApplyDetectsDuplicateFields applies, as the
// conformance test FieldValidation "should detect duplicates in a CR when
// preserving unknown fields" does, a YAML configuration with a key twice
// in a subtree that keeps unknown fields: fieldValidation=Strict refuses
// it with a 400 naming the line, as upstream's strict decoding of the
// applied configuration does; Warn (and the default) apply it with that
// as a warning; Ignore applies it silently.
func TestCustomResourceApplyDetectsDuplicateFields(t *testing.T) {
	ctx, cancel := contextWithTimeout(t, 60*time.Second)
	defer cancel()
	const group = "applystrict.example.com"
	crd := crontabs(group)
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	spec.XPreserveUnknownFields = ptr.To(true)
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	if _, err := createCRD(t, ctx, crd); err != nil {
		t.Fatal(err)
	}
	defer deleteCRD(t, ctx, crd.Name)
	waitCRD(t, ctx, crd.Name, established)
	cr := dynamic.NewForConfigOrDie(config(t)).Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "crontabs"}).Namespace("default")
	const duplicate = `line 9: key "foo" already set in map`
	for _, tc := range []struct {
		name            string
		fieldValidation string
		wantBadRequest  bool
		wantWarning     bool
	}{
		{name: "Strict refuses a duplicated key", fieldValidation: metav1.FieldValidationStrict, wantBadRequest: true},
		{name: "Warn applies it with a warning", fieldValidation: metav1.FieldValidationWarn, wantWarning: true},
		{name: "the default is Warn", fieldValidation: "", wantWarning: true},
		{name: "Ignore applies it silently", fieldValidation: metav1.FieldValidationIgnore},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "dup-" + strings.ToLower(cmp.Or(tc.fieldValidation, "default"))
			// The conformance test's body: the second foo is on line 9.
			body := fmt.Sprintf(`
apiVersion: %s/v1
kind: CronTab
metadata:
  name: %s
spec:
  unknown: uk1
  foo: foo1
  foo: foo2
  cronSpec: "* * * * */5"
  ports:
  - name: x
    containerPort: 80
    protocol: TCP`, group, name)
			path := "/apis/" + group + "/v1/namespaces/default/crontabs/" + name + "?fieldManager=field_validation_mgr"
			if tc.fieldValidation != "" {
				path += "&fieldValidation=" + tc.fieldValidation
			}
			var code int
			var st metav1.Status
			var hdr http.Header
			for range 200 { // Established comes a moment before the routes
				if code, st, hdr = raw(t, "PATCH", path, string(types.ApplyPatchType), "application/json", []byte(body)); code != http.StatusNotFound {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			warned := strings.Contains(strings.Join(hdr.Values("Warning"), "\n"), `line 9: key \"foo\" already set in map`)
			if tc.wantBadRequest {
				if code != http.StatusBadRequest || !strings.Contains(st.Message, duplicate) {
					t.Fatalf("apply: %d %q, want a 400 naming the duplicate", code, st.Message)
				}
				if _, err := cr.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("refused apply created the object: %v", err)
				}
				return
			}
			if code != http.StatusCreated {
				t.Fatalf("apply: %d %q, want 201", code, st.Message)
			}
			if warned != tc.wantWarning {
				t.Errorf("warned of the duplicate %t, want %t", warned, tc.wantWarning)
			}
			got, err := cr.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if foo := got.Object["spec"].(map[string]any)["foo"]; foo != "foo2" {
				t.Errorf("spec.foo %v, want the last value foo2", foo)
			}
		})
	}
}
