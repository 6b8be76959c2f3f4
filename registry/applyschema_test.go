package registry_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite/registry/apiextensions"
)

// TestCRDWritesKeepManagedFields checks that CustomResourceDefinitions,
// whose schema client-go does not compile in, get a field manager from
// their strategy's ApplySchema: writes record managed fields, and the
// apiserver serves server-side apply with the same manager.
func TestCRDWritesKeepManagedFields(t *testing.T) {
	s := newStore(t, apiextensions.Strategy(nil))
	for _, sub := range []string{"", "status"} {
		if s.FieldManager(sub) == nil {
			t.Fatalf("no field manager for customresourcedefinitions %q", sub)
		}
	}
	out, err := s.Create(t.Context(), "", testCRD(), &metav1.CreateOptions{FieldManager: "installer"})
	if err != nil {
		t.Fatal(err)
	}
	m := mustAccessor(t, out)
	if f := m.GetManagedFields(); len(f) != 1 || f[0].Manager != "installer" || f[0].Operation != metav1.ManagedFieldsOperationUpdate {
		t.Fatalf("managedFields %+v, want one Update entry of installer", f)
	}
}
