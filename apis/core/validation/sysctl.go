package validation

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Sysctl names as upstream's pkg/apis/core/validation (IsValidSysctlName):
// segments of lower-case alphanumerics, '-' and '_' inside, joined by '.'
// or '/', at most 253 characters.
const (
	sysctlSegmentFmt = "[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
	sysctlMaxLength  = 253
)

var sysctlNameRegexp = regexp.MustCompile("^(" + sysctlSegmentFmt + "[\\./])*" + sysctlSegmentFmt + "$")

// validateSysctls checks the pod's sysctls: each named, the name valid,
// none twice. Whether the node allows a sysctl is the node's decision
// (SysctlForbidden), not the API's. Left out: upstream's rejection of
// net.* with hostNetwork and IPC sysctls with hostIPC.
func validateSysctls(sysctls []corev1.Sysctl, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := map[string]bool{}
	for i, s := range sysctls {
		p := fldPath.Index(i).Child("name")
		switch {
		case s.Name == "":
			allErrs = append(allErrs, field.Required(p, ""))
		case len(s.Name) > sysctlMaxLength || !sysctlNameRegexp.MatchString(s.Name):
			allErrs = append(allErrs, field.Invalid(p, s.Name, fmt.Sprintf("must have at most %d characters and match regex %s", sysctlMaxLength, sysctlNameRegexp)))
		case names[s.Name]:
			allErrs = append(allErrs, field.Duplicate(p, s.Name))
		}
		names[s.Name] = true
	}
	return allErrs
}

// The bounds of a podCertificate projection's maxExpirationSeconds
// (upstream's pkg/apis/certificates MaxMaxExpirationSeconds and
// KubernetesMaxMaxExpirationSeconds): at least an hour, at most 91 days,
// or 24 hours for the kubernetes.io signers.
const (
	minPodCertificateExpirationSeconds           = 3600
	maxPodCertificateExpirationSeconds           = 91 * 24 * 60 * 60
	maxKubernetesPodCertificateExpirationSeconds = 24 * 60 * 60
)

// validatePodCertificateExpiration checks a podCertificate projection's
// maxExpirationSeconds, with upstream's messages.
func validatePodCertificateExpiration(pc *corev1.PodCertificateProjection, fldPath *field.Path) field.ErrorList {
	if pc.MaxExpirationSeconds == nil {
		return nil
	}
	var allErrs field.ErrorList
	e := *pc.MaxExpirationSeconds
	if e < minPodCertificateExpirationSeconds {
		allErrs = append(allErrs, field.Invalid(fldPath, e, fmt.Sprintf("if provided, maxExpirationSeconds must be >= %d", minPodCertificateExpirationSeconds)))
	}
	limit := maxPodCertificateExpirationSeconds
	if isKubernetesSignerName(pc.SignerName) {
		limit = maxKubernetesPodCertificateExpirationSeconds
	}
	if int(e) > limit {
		allErrs = append(allErrs, field.Invalid(fldPath, e, fmt.Sprintf("if provided, maxExpirationSeconds must be <= %d", limit)))
	}
	return allErrs
}

// isKubernetesSignerName: a signer of kubernetes.io or one of its
// subdomains.
func isKubernetesSignerName(signerName string) bool {
	host, _, _ := strings.Cut(signerName, "/")
	return host == "kubernetes.io" || strings.HasSuffix(host, ".kubernetes.io")
}
