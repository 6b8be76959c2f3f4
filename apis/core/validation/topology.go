package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const isNotPositiveErrorMsg = "must be greater than zero"

var (
	supportedScheduleActions = []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}
	supportedNodePolicies    = []corev1.NodeInclusionPolicy{corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore}
)

// validateTopologySpreadConstraints checks each constraint (positive
// maxSkew, a topology key, a known whenUnsatisfiable, minDomains only with
// DoNotSchedule, known node policies, a valid label selector) and that no
// two constraints share a topology key and action. matchLabelKeys is not
// checked.
func validateTopologySpreadConstraints(constraints []corev1.TopologySpreadConstraint, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, c := range constraints {
		p := fldPath.Index(i)
		if c.MaxSkew <= 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("maxSkew"), c.MaxSkew, isNotPositiveErrorMsg))
		}
		if c.TopologyKey == "" {
			allErrs = append(allErrs, field.Required(p.Child("topologyKey"), "can not be empty"))
		}
		if !contains(supportedScheduleActions, c.WhenUnsatisfiable) {
			allErrs = append(allErrs, field.NotSupported(p.Child("whenUnsatisfiable"), c.WhenUnsatisfiable, supportedScheduleActions))
		}
		for _, other := range constraints[i+1:] {
			if c.TopologyKey == other.TopologyKey && c.WhenUnsatisfiable == other.WhenUnsatisfiable {
				// Upstream's path names the tuple.
				allErrs = append(allErrs, field.Duplicate(p.Child("{topologyKey, whenUnsatisfiable}"), fmt.Sprintf("{%v, %v}", c.TopologyKey, c.WhenUnsatisfiable)))
				break
			}
		}
		if m := c.MinDomains; m != nil {
			if *m <= 0 {
				allErrs = append(allErrs, field.Invalid(p.Child("minDomains"), m, isNotPositiveErrorMsg))
			}
			if c.WhenUnsatisfiable != corev1.DoNotSchedule {
				allErrs = append(allErrs, field.Invalid(p.Child("minDomains"), m,
					fmt.Sprintf("can only use minDomains if whenUnsatisfiable=%s, not %s", corev1.DoNotSchedule, c.WhenUnsatisfiable)))
			}
		}
		if np := c.NodeAffinityPolicy; np != nil && !contains(supportedNodePolicies, *np) {
			allErrs = append(allErrs, field.NotSupported(p.Child("nodeAffinityPolicy"), np, supportedNodePolicies))
		}
		if np := c.NodeTaintsPolicy; np != nil && !contains(supportedNodePolicies, *np) {
			allErrs = append(allErrs, field.NotSupported(p.Child("nodeTaintsPolicy"), np, supportedNodePolicies))
		}
		allErrs = append(allErrs, metavalidation.ValidateLabelSelector(c.LabelSelector, metavalidation.LabelSelectorValidationOptions{}, p.Child("labelSelector"))...)
	}
	return allErrs
}
