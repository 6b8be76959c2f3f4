package validation

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validEnvFieldPaths are the pod fields an env var may take through
// valueFrom.fieldRef (besides metadata.labels['x'] and
// metadata.annotations['x']).
var validEnvFieldPaths = []string{
	"metadata.name", "metadata.namespace", "metadata.uid",
	"spec.nodeName", "spec.serviceAccountName",
	"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
}

// validateEnv checks env var names (the relaxed rule upstream has used
// since RelaxedEnvironmentVariableValidation went GA: any printable ASCII
// but '=') and their valueFrom sources.
func validateEnv(vars []corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, ev := range vars {
		idxPath := fldPath.Index(i)
		if ev.Name == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("name"), ""))
		} else {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Name) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), ev.Name, msg))
			}
		}
		allErrs = append(allErrs, validateEnvVarValueFrom(ev, idxPath.Child("valueFrom"))...)
	}
	return allErrs
}

func validateEnvVarValueFrom(ev corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	from := ev.ValueFrom
	if from == nil {
		return nil
	}
	var allErrs field.ErrorList
	sources := 0
	if from.FieldRef != nil {
		sources++
		allErrs = append(allErrs, validateObjectFieldSelector(from.FieldRef, validEnvFieldPaths, fldPath.Child("fieldRef"))...)
	}
	if from.ResourceFieldRef != nil {
		sources++
		allErrs = append(allErrs, validateResourceFieldSelector(from.ResourceFieldRef, false, fldPath.Child("resourceFieldRef"))...)
	}
	if from.ConfigMapKeyRef != nil {
		sources++
		allErrs = append(allErrs, validateKeySelector(from.ConfigMapKeyRef.Name, from.ConfigMapKeyRef.Key, fldPath.Child("configMapKeyRef"))...)
	}
	if from.SecretKeyRef != nil {
		sources++
		allErrs = append(allErrs, validateKeySelector(from.SecretKeyRef.Name, from.SecretKeyRef.Key, fldPath.Child("secretKeyRef"))...)
	}
	if from.FileKeyRef != nil {
		sources++
	}
	if sources == 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
	}
	if ev.Value != "" {
		if sources != 0 {
			allErrs = append(allErrs, field.Invalid(fldPath, "", "may not be specified when `value` is not empty"))
		}
	} else if sources > 1 {
		allErrs = append(allErrs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
	}
	return allErrs
}

// validateObjectFieldSelector checks a downward API field reference: the
// field is converted as upstream's ConvertDownwardAPIFieldLabel does (which
// refuses unknown fields outright), then checked against the fields this
// use allows.
func validateObjectFieldSelector(fs *corev1.ObjectFieldSelector, valid []string, fldPath *field.Path) field.ErrorList {
	if fs.APIVersion == "" {
		return field.ErrorList{field.Required(fldPath.Child("apiVersion"), "")}
	}
	if fs.FieldPath == "" {
		return field.ErrorList{field.Required(fldPath.Child("fieldPath"), "")}
	}
	internal, err := convertDownwardAPIFieldLabel(fs.APIVersion, fs.FieldPath)
	if err != "" {
		return field.ErrorList{field.Invalid(fldPath.Child("fieldPath"), fs.FieldPath, "error converting fieldPath: "+err)}
	}
	if path, subscript, ok := splitSubscript(internal); ok {
		switch path {
		case "metadata.annotations":
			return validateQualifiedName(strings.ToLower(subscript), fldPath)
		case "metadata.labels":
			return validateQualifiedName(subscript, fldPath)
		default:
			return field.ErrorList{field.Invalid(fldPath, path, "does not support subscript")}
		}
	}
	if !slices.Contains(valid, internal) {
		return field.ErrorList{field.NotSupported(fldPath.Child("fieldPath"), internal, slices.Sorted(slices.Values(valid)))}
	}
	return nil
}

// downwardAPIFieldLabels are the pod fields the downward API knows at all.
var downwardAPIFieldLabels = []string{
	"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
	"spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName",
	"status.phase", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
}

// convertDownwardAPIFieldLabel is upstream's pods.ConvertDownwardAPIFieldLabel:
// it returns the internal field path, or the reason it has none.
func convertDownwardAPIFieldLabel(version, label string) (string, string) {
	if version != "v1" {
		return "", "unsupported pod version: " + version
	}
	if path, _, ok := splitSubscript(label); ok {
		if path == "metadata.annotations" || path == "metadata.labels" {
			return label, ""
		}
		return "", "field label does not support subscript: " + label
	}
	if label == "spec.host" {
		// Old v1 clients send spec.host.
		return "spec.nodeName", ""
	}
	if slices.Contains(downwardAPIFieldLabels, label) {
		return label, ""
	}
	return "", "field label not supported: " + label
}

// splitSubscript splits "metadata.labels['key']" into its path and key.
func splitSubscript(fieldPath string) (path, subscript string, ok bool) {
	if !strings.HasSuffix(fieldPath, "']") {
		return fieldPath, "", false
	}
	s := strings.TrimSuffix(fieldPath, "']")
	parts := strings.SplitN(s, "['", 2)
	if len(parts) < 2 || len(parts[0]) == 0 {
		return fieldPath, "", false
	}
	return parts[0], parts[1], true
}

var validContainerResourceFields = []string{
	"limits.cpu", "limits.ephemeral-storage", "limits.memory",
	"requests.cpu", "requests.ephemeral-storage", "requests.memory",
}

var (
	cpuDivisors    = []string{"1m", "1"}
	memoryDivisors = []string{"1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"}
)

// validateResourceFieldSelector checks a resourceFieldRef; in a volume
// (volume true) it must name its container.
func validateResourceFieldSelector(fs *corev1.ResourceFieldSelector, volume bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case volume && fs.ContainerName == "":
		allErrs = append(allErrs, field.Required(fldPath.Child("containerName"), ""))
	case fs.Resource == "":
		allErrs = append(allErrs, field.Required(fldPath.Child("resource"), ""))
	case !slices.Contains(validContainerResourceFields, fs.Resource) &&
		!strings.HasPrefix(fs.Resource, "limits.hugepages-") && !strings.HasPrefix(fs.Resource, "requests.hugepages-"):
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("resource"), fs.Resource, validContainerResourceFields))
	}
	if fs.Divisor.IsZero() {
		return allErrs
	}
	divisor := fs.Divisor.String()
	divPath := fldPath.Child("divisor")
	switch {
	case fs.Resource == "limits.cpu" || fs.Resource == "requests.cpu":
		if !slices.Contains(cpuDivisors, divisor) {
			allErrs = append(allErrs, field.Invalid(divPath, fs.Resource, "only divisor's values 1m and 1 are supported with the cpu resource"))
		}
	case fs.Resource == "limits.memory" || fs.Resource == "requests.memory":
		if !slices.Contains(memoryDivisors, divisor) {
			allErrs = append(allErrs, field.Invalid(divPath, fs.Resource, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource"))
		}
	case fs.Resource == "limits.ephemeral-storage" || fs.Resource == "requests.ephemeral-storage":
		if !slices.Contains(memoryDivisors, divisor) {
			allErrs = append(allErrs, field.Invalid(divPath, fs.Resource, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the local ephemeral storage resource"))
		}
	case strings.HasPrefix(fs.Resource, "limits.hugepages-") || strings.HasPrefix(fs.Resource, "requests.hugepages-"):
		if !slices.Contains(memoryDivisors, divisor) {
			allErrs = append(allErrs, field.Invalid(divPath, fs.Resource, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the hugepages resource"))
		}
	}
	return allErrs
}

// validateKeySelector checks a configMapKeyRef or secretKeyRef.
func validateKeySelector(name, key string, fldPath *field.Path) field.ErrorList {
	allErrs := nameErrors(ValidateSecretName, name, fldPath.Child("name"))
	if key == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("key"), ""))
	} else {
		for _, msg := range validation.IsConfigMapKey(key) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("key"), key, msg))
		}
	}
	return allErrs
}

func validateEnvFrom(sources []corev1.EnvFromSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, ev := range sources {
		idxPath := fldPath.Index(i)
		if ev.Prefix != "" {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Prefix) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("prefix"), ev.Prefix, msg))
			}
		}
		n := 0
		if ev.ConfigMapRef != nil {
			n++
			allErrs = append(allErrs, validateEnvSourceName(ev.ConfigMapRef.Name, idxPath.Child("configMapRef").Child("name"))...)
		}
		if ev.SecretRef != nil {
			n++
			allErrs = append(allErrs, validateEnvSourceName(ev.SecretRef.Name, idxPath.Child("secretRef").Child("name"))...)
		}
		// Upstream reports these two at the list, not at the item.
		if n == 0 {
			allErrs = append(allErrs, field.Invalid(fldPath, "", "must specify one of: `configMapRef` or `secretRef`"))
		} else if n > 1 {
			allErrs = append(allErrs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
		}
	}
	return allErrs
}

// validateEnvSourceName: required, and a DNS subdomain allowing a trailing
// dash (upstream validates it as a prefix).
func validateEnvSourceName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var allErrs field.ErrorList
	for _, msg := range ValidateSecretName(name, true) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	return allErrs
}
