package validation

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// want is one expected error: its type and field path, as upstream
// reports them.
type want struct {
	typ   field.ErrorType
	field string
}

func (w want) String() string { return fmt.Sprintf("%s: %s", w.field, w.typ) }

// checkErrors fails unless errs holds exactly the wanted errors, in any
// order.
func checkErrors(t *testing.T, errs field.ErrorList, wants ...want) {
	t.Helper()
	var got, exp []string
	for _, e := range errs {
		got = append(got, want{e.Type, e.Field}.String())
	}
	for _, w := range wants {
		exp = append(exp, w.String())
	}
	slices.Sort(got)
	slices.Sort(exp)
	if !slices.Equal(got, exp) {
		t.Errorf("errors:\n got  %s\n want %s\nfull: %v", strings.Join(got, " | "), strings.Join(exp, " | "), errs)
	}
}
