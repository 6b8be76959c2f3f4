package validation

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateSecret checks a secret: name a DNS-1123 subdomain, data keys
// valid config map keys, at most MaxSecretSize bytes of data, and the keys
// each built-in type requires (service-account token: the service account
// annotation; dockercfg and dockerconfigjson: their key, holding JSON; basic
// auth: username or password; ssh-auth: the private key; tls: certificate
// and key). It expects stringData already merged into data, as upstream's
// conversion does (defaults.Secret).
func ValidateSecret(s *corev1.Secret) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&s.ObjectMeta, true, ValidateSecretName, field.NewPath("metadata"))
	dataPath := field.NewPath("data")
	total := 0
	for _, key := range sortedKeys(s.Data) {
		for _, msg := range validation.IsConfigMapKey(key) {
			allErrs = append(allErrs, field.Invalid(dataPath.Key(key), key, msg))
		}
		total += len(s.Data[key])
	}
	if total > MaxSecretSize {
		allErrs = append(allErrs, field.TooLong(dataPath, "", MaxSecretSize))
	}

	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		// Only the account name is required; a controller adds the rest.
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			allErrs = append(allErrs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		allErrs = append(allErrs, validateJSONKey(s.Data, corev1.DockerConfigKey, dataPath)...)
	case corev1.SecretTypeDockerConfigJson:
		allErrs = append(allErrs, validateJSONKey(s.Data, corev1.DockerConfigJsonKey, dataPath)...)
	case corev1.SecretTypeBasicAuth:
		_, hasUser := s.Data[corev1.BasicAuthUsernameKey]
		_, hasPassword := s.Data[corev1.BasicAuthPasswordKey]
		if !hasUser && !hasPassword {
			allErrs = append(allErrs, field.Required(dataPath.Key(corev1.BasicAuthUsernameKey), ""))
			allErrs = append(allErrs, field.Required(dataPath.Key(corev1.BasicAuthPasswordKey), ""))
		}
	case corev1.SecretTypeSSHAuth:
		if len(s.Data[corev1.SSHAuthPrivateKey]) == 0 {
			allErrs = append(allErrs, field.Required(dataPath.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeTLS:
		if _, ok := s.Data[corev1.TLSCertKey]; !ok {
			allErrs = append(allErrs, field.Required(dataPath.Key(corev1.TLSCertKey), ""))
		}
		if _, ok := s.Data[corev1.TLSPrivateKeyKey]; !ok {
			allErrs = append(allErrs, field.Required(dataPath.Key(corev1.TLSPrivateKeyKey), ""))
		}
	}
	return allErrs
}

// validateJSONKey: key is present and holds a JSON object. The contents
// are never echoed back.
func validateJSONKey(data map[string][]byte, key string, dataPath *field.Path) field.ErrorList {
	b, ok := data[key]
	if !ok {
		return field.ErrorList{field.Required(dataPath.Key(key), "")}
	}
	if err := json.Unmarshal(b, &map[string]any{}); err != nil {
		return field.ErrorList{field.Invalid(dataPath.Key(key), "<secret contents redacted>", err.Error())}
	}
	return nil
}

// ValidateSecretUpdate checks an update: metadata update rules, type
// fixed, an immutable secret keeps its data and stays immutable, and the new
// object is valid.
func ValidateSecretUpdate(s, old *corev1.Secret) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&s.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(s.Type, old.Type, field.NewPath("type"))...)
	if old.Immutable != nil && *old.Immutable {
		if s.Immutable == nil || !*s.Immutable {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("immutable"), immutableMsg))
		}
		if !reflect.DeepEqual(s.Data, old.Data) {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("data"), immutableMsg))
		}
	}
	return append(allErrs, ValidateSecret(s)...)
}

// sortedKeys gives a stable error order for map-valued fields.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
