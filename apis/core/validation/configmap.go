package validation

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxSecretSize is the most data a secret or config map may hold, as
// upstream's core.MaxSecretSize: 1 MiB, so that one object never fills
// etcd's request size limit.
const MaxSecretSize = 1 * 1024 * 1024

const immutableMsg = "field is immutable when `immutable` is set"

// ValidateConfigMap checks a config map: name a DNS-1123 subdomain, keys
// of data and binaryData valid config map keys and not in both, and at most
// MaxSecretSize bytes of values together.
func ValidateConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&cm.ObjectMeta, true, ValidateConfigMapName, field.NewPath("metadata"))
	total := 0
	for _, key := range sortedKeys(cm.Data) {
		keyPath := field.NewPath("data").Key(key)
		for _, msg := range validation.IsConfigMapKey(key) {
			allErrs = append(allErrs, field.Invalid(keyPath, key, msg))
		}
		if _, dup := cm.BinaryData[key]; dup {
			allErrs = append(allErrs, field.Invalid(keyPath, key, "duplicate of key present in binaryData"))
		}
		total += len(cm.Data[key])
	}
	for _, key := range sortedKeys(cm.BinaryData) {
		for _, msg := range validation.IsConfigMapKey(key) {
			allErrs = append(allErrs, field.Invalid(field.NewPath("binaryData").Key(key), key, msg))
		}
		total += len(cm.BinaryData[key])
	}
	if total > MaxSecretSize {
		// The empty path says the error is about the whole object; clients see
		// it as "[]: Too long: may not be more than 1048576 bytes".
		allErrs = append(allErrs, field.TooLong(field.NewPath(""), "", MaxSecretSize))
	}
	return allErrs
}

// ValidateConfigMapUpdate checks an update: metadata update rules, an
// immutable config map keeps its data and stays immutable, and the new object
// is valid.
func ValidateConfigMapUpdate(cm, old *corev1.ConfigMap) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&cm.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	if old.Immutable != nil && *old.Immutable {
		if cm.Immutable == nil || !*cm.Immutable {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("immutable"), immutableMsg))
		}
		if !reflect.DeepEqual(cm.Data, old.Data) {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("data"), immutableMsg))
		}
		if !reflect.DeepEqual(cm.BinaryData, old.BinaryData) {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("binaryData"), immutableMsg))
		}
	}
	return append(allErrs, ValidateConfigMap(cm)...)
}
