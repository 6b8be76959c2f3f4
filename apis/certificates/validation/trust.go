package validation

// Upstream's validation of certificates.k8s.io/v1 ClusterTrustBundles and
// PodCertificateRequests (k8s.io/kubernetes/pkg/apis/certificates/validation),
// ported to the v1 types with its field paths and messages (the essential
// rules of PodCertificateRequests: names, required fields, an immutable
// spec, the condition types of the status).

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const maxTrustBundleSize = 1 * 1024 * 1024

// AnyClusterTrustBundleName accepts every name: a ClusterTrustBundle's name
// rule depends on its signerName, so ValidateClusterTrustBundle checks it.
func AnyClusterTrustBundleName(string, bool) []string { return nil }

// clusterTrustBundleName is upstream's ValidateClusterTrustBundleName.
func clusterTrustBundleName(signerName, name string) []string {
	if signerName == "" {
		if strings.Contains(name, ":") {
			return []string{"ClusterTrustBundle without signer name must not have \":\" in its name"}
		}
		return apivalidation.NameIsDNSSubdomain(name, false)
	}
	prefix := strings.ReplaceAll(signerName, "/", ":") + ":"
	if !strings.HasPrefix(name, prefix) {
		return []string{fmt.Sprintf("ClusterTrustBundle for signerName %s must be named with prefix %s", signerName, prefix)}
	}
	return apivalidation.NameIsDNSSubdomain(strings.TrimPrefix(name, prefix), false)
}

// ValidateSignerName is upstream's: a domain and a path,
// "example.com/signer-name".
func ValidateSignerName(fldPath *field.Path, signerName string) field.ErrorList {
	if signerName == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	segments := strings.Split(signerName, "/")
	if len(segments) != 2 {
		return field.ErrorList{field.Invalid(fldPath, signerName, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	var el field.ErrorList
	if len(segments[0]) > validation.DNS1123SubdomainMaxLength {
		el = append(el, field.TooLong(fldPath, "", validation.DNS1123SubdomainMaxLength))
	}
	for _, lbl := range strings.Split(segments[0], ".") {
		for _, err := range validation.IsDNS1123Label(lbl) {
			el = append(el, field.Invalid(fldPath, segments[0], fmt.Sprintf("validating label %q: %s", lbl, err)))
		}
	}
	if len(strings.Split(segments[0], ".")) < 2 {
		el = append(el, field.Invalid(fldPath, segments[0], "should be a domain with at least two segments separated by dots"))
	}
	for _, msg := range apivalidation.NameIsDNSSubdomain(segments[1], false) {
		el = append(el, field.Invalid(fldPath, segments[1], msg))
	}
	return el
}

// ValidateClusterTrustBundle is upstream's ValidateClusterTrustBundle.
func ValidateClusterTrustBundle(b *certificatesv1.ClusterTrustBundle) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range clusterTrustBundleName(b.Spec.SignerName, b.Name) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("metadata", "name"), b.Name, msg))
	}
	if b.Spec.SignerName != "" {
		allErrs = append(allErrs, ValidateSignerName(field.NewPath("spec", "signerName"), b.Spec.SignerName)...)
	}
	return append(allErrs, validateTrustBundle(field.NewPath("spec", "trustBundle"), b.Spec.TrustBundle)...)
}

// ValidateClusterTrustBundleUpdate is upstream's: signerName is immutable.
func ValidateClusterTrustBundleUpdate(b, old *certificatesv1.ClusterTrustBundle) field.ErrorList {
	allErrs := apivalidation.ValidateImmutableField(b.Spec.SignerName, old.Spec.SignerName, field.NewPath("spec", "signerName"))
	return append(allErrs, ValidateClusterTrustBundle(b)...)
}

func validateTrustBundle(path *field.Path, in string) field.ErrorList {
	if len(in) > maxTrustBundleSize {
		return field.ErrorList{field.TooLong(path, "", maxTrustBundleSize)}
	}
	var allErrs field.ErrorList
	seen := map[string][]int{}
	rest := []byte(in)
	for i := 0; ; i++ {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		switch {
		case b.Type != "CERTIFICATE":
			allErrs = append(allErrs, field.Invalid(path, "<value omitted>", fmt.Sprintf("entry %d has bad block type: %v", i, b.Type)))
			continue
		case len(b.Headers) != 0:
			allErrs = append(allErrs, field.Invalid(path, "<value omitted>", fmt.Sprintf("entry %d has PEM block headers", i)))
			continue
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		switch {
		case err != nil:
			allErrs = append(allErrs, field.Invalid(path, "<value omitted>", fmt.Sprintf("entry %d does not parse as X.509", i)))
		case !cert.IsCA:
			allErrs = append(allErrs, field.Invalid(path, "<value omitted>", fmt.Sprintf("entry %d does not have the CA bit set", i)))
		case !cert.BasicConstraintsValid:
			allErrs = append(allErrs, field.Invalid(path, "<value omitted>", fmt.Sprintf("entry %d has invalid basic constraints", i)))
		default:
			seen[string(b.Bytes)] = append(seen[string(b.Bytes)], i)
		}
	}
	if len(allErrs) != 0 {
		return allErrs
	}
	if len(seen) == 0 {
		allErrs = append(allErrs, field.Invalid(path, "<value omitted>", "at least one trust anchor must be provided"))
	}
	for _, indices := range seen {
		if len(indices) > 1 {
			allErrs = append(allErrs, field.Invalid(path, "<value omitted>", fmt.Sprintf("duplicate trust anchor (indices %v)", indices)))
		}
	}
	return allErrs
}

// ValidatePodCertificateRequest is the essential part of upstream's
// ValidatePodCertificateRequestCreate.
func ValidatePodCertificateRequest(r *certificatesv1.PodCertificateRequest) field.ErrorList {
	spec := field.NewPath("spec")
	allErrs := ValidateSignerName(spec.Child("signerName"), r.Spec.SignerName)
	for _, msg := range apivalidation.NameIsDNSSubdomain(r.Spec.PodName, false) {
		allErrs = append(allErrs, field.Invalid(spec.Child("podName"), r.Spec.PodName, msg))
	}
	for _, uid := range []struct {
		name  string
		value string
	}{{"podUID", string(r.Spec.PodUID)}, {"serviceAccountUID", string(r.Spec.ServiceAccountUID)}, {"nodeUID", string(r.Spec.NodeUID)}} {
		if uid.value == "" {
			allErrs = append(allErrs, field.Invalid(spec.Child(uid.name), uid.value, "must not be empty"))
		} else if len(uid.value) > 128 {
			allErrs = append(allErrs, field.TooLong(spec.Child(uid.name), uid.value, 128))
		}
	}
	for _, msg := range apivalidation.NameIsDNSSubdomain(r.Spec.ServiceAccountName, false) {
		allErrs = append(allErrs, field.Invalid(spec.Child("serviceAccountName"), r.Spec.ServiceAccountName, msg))
	}
	for _, msg := range apivalidation.NameIsDNSSubdomain(string(r.Spec.NodeName), false) {
		allErrs = append(allErrs, field.Invalid(spec.Child("nodeName"), r.Spec.NodeName, msg))
	}
	// The v1 kind carries the key in a stub PKCS#10 request only (the
	// internal type's pkixPublicKey and proofOfPossession are not served).
	pkcs10 := spec.Child("stubPKCS10Request")
	if len(r.Spec.StubPKCS10Request) == 0 {
		allErrs = append(allErrs, field.Invalid(spec, field.OmitValueType{}, "exactly one of (stubPKCS10Request) or (pkixPublicKey, proofOfPossession) must be set"))
	} else if _, err := x509.ParseCertificateRequest(r.Spec.StubPKCS10Request); err != nil {
		allErrs = append(allErrs, field.Invalid(pkcs10, field.OmitValueType{}, "must be a valid PKCS#10 CSR"))
	}
	return allErrs
}

// ValidatePodCertificateRequestUpdate is upstream's: the spec is
// immutable.
func ValidatePodCertificateRequestUpdate(r, old *certificatesv1.PodCertificateRequest) field.ErrorList {
	return apivalidation.ValidateImmutableField(r.Spec, old.Spec, field.NewPath("spec"))
}

// ValidatePodCertificateRequestStatusUpdate is upstream's rule on the
// conditions: at most one of Issued, Denied and Failed, each True.
func ValidatePodCertificateRequestStatusUpdate(r, _ *certificatesv1.PodCertificateRequest) field.ErrorList {
	var allErrs field.ErrorList
	terminal := 0
	for i, cond := range r.Status.Conditions {
		p := field.NewPath("status", "conditions").Index(i)
		switch cond.Type {
		case certificatesv1.PodCertificateRequestConditionTypeIssued, certificatesv1.PodCertificateRequestConditionTypeDenied, certificatesv1.PodCertificateRequestConditionTypeFailed:
			terminal++
			if terminal > 1 {
				allErrs = append(allErrs, field.Invalid(p.Child("type"), cond.Type, `There may be at most one condition with type "Issued", "Denied", or "Failed"`))
			}
			if cond.Status != metav1.ConditionTrue {
				allErrs = append(allErrs, field.NotSupported(p.Child("status"), cond.Status, []metav1.ConditionStatus{metav1.ConditionTrue}))
			}
		default:
			allErrs = append(allErrs, field.NotSupported(p.Child("type"), cond.Type, []string{certificatesv1.PodCertificateRequestConditionTypeIssued, certificatesv1.PodCertificateRequestConditionTypeDenied, certificatesv1.PodCertificateRequestConditionTypeFailed}))
		}
	}
	return append(allErrs, metav1validation.ValidateConditions(r.Status.Conditions, field.NewPath("status", "conditions"))...)
}
