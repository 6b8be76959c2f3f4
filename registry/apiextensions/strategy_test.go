package apiextensions

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A /status write is validated as upstream's status strategy validates
// it: metadata and accepted names, not the spec; and, as upstream's, it
// may change metadata such as finalizers.
func TestCRDStatusWriteValidation(t *testing.T) {
	status := Strategy(nil).Subresources["status"]
	old := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com", ResourceVersion: "5", Finalizers: []string{CleanupFinalizer}},
		Spec:       apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com"},
	}
	for _, tc := range []struct {
		name   string
		change func(*apiextensionsv1.CustomResourceDefinition)
		want   string // "" for valid
	}{
		{"accepted names", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Status.AcceptedNames = apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget", ListKind: "WidgetList"}
		}, ""},
		{"finalizer removed", func(c *apiextensionsv1.CustomResourceDefinition) { c.Finalizers = nil }, ""},
		{"spec is not looked at", func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Group = "" }, ""},
		{"bad plural", func(c *apiextensionsv1.CustomResourceDefinition) { c.Status.AcceptedNames.Plural = "Wid_gets" }, "status.acceptedNames.plural: Invalid value"},
		{"name changed", func(c *apiextensionsv1.CustomResourceDefinition) { c.Name = "other.example.com" }, "metadata.name: Invalid value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := old.DeepCopy()
			tc.change(next)
			status.PrepareForUpdate(next, old)
			errs := status.ValidateUpdate(next, old)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("refused: %v", errs)
			case tc.want != "" && !strings.Contains(errs.ToAggregate().Error(), tc.want):
				t.Errorf("errors %v, want %q", errs, tc.want)
			}
			if next.Spec.Group != "example.com" {
				t.Errorf("spec changed by a status write: %+v", next.Spec)
			}
		})
	}
}
