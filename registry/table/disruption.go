package table

import (
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// registerDisruption adds the printers of the disruption branch's kinds
// (upstream's pkg/printers/internalversion).
func registerDisruption(c *Convertor) {
	c.register(podDisruptionBudgetPrinter, &policyv1.PodDisruptionBudget{}, &policyv1.PodDisruptionBudgetList{})
}

var podDisruptionBudgetPrinter = &printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Min Available", Type: "string", Description: "The minimum number of pods that must be available."},
		{Name: "Max Unavailable", Type: "string", Description: "The maximum number of pods that may be unavailable."},
		{Name: "Allowed Disruptions", Type: "integer", Description: "Calculated number of pods that may be disrupted at this time."},
		ageColumn,
	},
	row: func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		p := obj.(*policyv1.PodDisruptionBudget)
		return []any{p.Name, intOrStringOrNA(p.Spec.MinAvailable), intOrStringOrNA(p.Spec.MaxUnavailable),
			int64(p.Status.DisruptionsAllowed), age(p.CreationTimestamp, now)}, nil
	},
}

func intOrStringOrNA(v *intstr.IntOrString) string {
	if v == nil {
		return "N/A"
	}
	return v.String()
}
