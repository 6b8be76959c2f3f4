package validation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateContainerResourceName is upstream's: a standard container
// resource (cpu, memory, ...) or an extended resource name. Autoscalers'
// containerResource metrics name one.
func ValidateContainerResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	return validateContainerResourceName(name, fldPath)
}
