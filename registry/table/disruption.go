package table

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// registerDisruption adds the printers of the disruption branch's kinds
// (upstream's pkg/printers/internalversion).
func registerDisruption(c *Convertor) {
	c.register(podDisruptionBudgetPrinter, &policyv1.PodDisruptionBudget{}, &policyv1.PodDisruptionBudgetList{})
	c.register(replicationControllerPrinter, &corev1.ReplicationController{}, &corev1.ReplicationControllerList{})
	c.register(podTemplatePrinter, &corev1.PodTemplate{}, &corev1.PodTemplateList{})
}

var replicationControllerPrinter = &printer{
	columns: append([]metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Desired", Type: "integer", Description: corev1.ReplicationControllerSpec{}.SwaggerDoc()["replicas"]},
		{Name: "Current", Type: "integer", Description: corev1.ReplicationControllerStatus{}.SwaggerDoc()["replicas"]},
		{Name: "Ready", Type: "integer", Description: corev1.ReplicationControllerStatus{}.SwaggerDoc()["readyReplicas"]},
		ageColumn,
	}, templateColumns(corev1.ReplicationControllerSpec{}.SwaggerDoc()["selector"])...),
	row: func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		rc := obj.(*corev1.ReplicationController)
		cells := []any{rc.Name, int64(int32Value(rc.Spec.Replicas)), int64(rc.Status.Replicas), int64(rc.Status.ReadyReplicas), age(rc.CreationTimestamp, now)}
		var spec corev1.PodSpec
		if rc.Spec.Template != nil {
			spec = rc.Spec.Template.Spec
		}
		return append(cells, templateCells(&spec, labels.FormatLabels(rc.Spec.Selector))...), nil
	},
}

var podTemplatePrinter = &printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Containers", Type: "string", Description: "Names of each container in the template."},
		{Name: "Images", Type: "string", Description: "Images referenced by each container in the template."},
		{Name: "Pod Labels", Type: "string", Description: "The labels for the pod template."},
	},
	row: func(obj runtime.Object, _ time.Time) ([]any, []metav1.TableRowCondition) {
		t := obj.(*corev1.PodTemplate)
		cells := templateCells(&t.Template.Spec, "")
		return []any{t.Name, cells[0], cells[1], labels.FormatLabels(t.Template.Labels)}, nil
	},
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
