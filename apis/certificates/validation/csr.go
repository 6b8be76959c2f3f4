package validation

// Upstream's validation of certificates.k8s.io/v1 CertificateSigningRequests
// (k8s.io/kubernetes/pkg/apis/certificates/validation) and its helpers for
// the kubelet's requests (pkg/apis/certificates/helpers.go), ported to the
// v1 types with their field paths and messages. Only the v1 API is served,
// so the legacy signer name is refused on create and tolerated only where
// a stored object already has it, as upstream.

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// legacyUnknownSignerName is v1beta1's default signer, refused in v1.
const legacyUnknownSignerName = "kubernetes.io/legacy-unknown"

// AnyCertificateRequestName is upstream's ValidateCertificateRequestName:
// "We don't care what you call your certificate requests."
func AnyCertificateRequestName(string, bool) []string { return nil }

var (
	// trueConditionTypes may only have the status True.
	trueConditionTypes = sets.New(certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed)
	trueStatusOnly     = sets.New(string(corev1.ConditionTrue))
	allStatusValues    = sets.New(string(corev1.ConditionTrue), string(corev1.ConditionFalse), string(corev1.ConditionUnknown))

	allValidUsages = sets.New(
		certificatesv1.UsageSigning, certificatesv1.UsageDigitalSignature, certificatesv1.UsageContentCommitment,
		certificatesv1.UsageKeyEncipherment, certificatesv1.UsageKeyAgreement, certificatesv1.UsageDataEncipherment,
		certificatesv1.UsageCertSign, certificatesv1.UsageCRLSign, certificatesv1.UsageEncipherOnly,
		certificatesv1.UsageDecipherOnly, certificatesv1.UsageAny, certificatesv1.UsageServerAuth,
		certificatesv1.UsageClientAuth, certificatesv1.UsageCodeSigning, certificatesv1.UsageEmailProtection,
		certificatesv1.UsageSMIME, certificatesv1.UsageIPsecEndSystem, certificatesv1.UsageIPsecTunnel,
		certificatesv1.UsageIPsecUser, certificatesv1.UsageTimestamping, certificatesv1.UsageOCSPSigning,
		certificatesv1.UsageMicrosoftSGC, certificatesv1.UsageNetscapeSGC,
	)
)

// csrOptions are upstream's certificateValidationOptions: what a path of
// update may change, and the bad data tolerated where a stored object
// already has it.
type csrOptions struct {
	allowSettingApprovalConditions bool
	allowSettingCertificate        bool
	allowBothApprovedAndDenied     bool
	allowLegacySignerName          bool
	allowDuplicateConditionTypes   bool
	allowEmptyConditionType        bool
	allowArbitraryCertificate      bool
	allowUnknownUsages             bool
	allowDuplicateUsages           bool
}

// ParseCSR decodes a PEM "CERTIFICATE REQUEST" block, as upstream's
// certificates.ParseCSR.
func ParseCSR(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}

func validateCSRRequest(pemBytes []byte) error {
	req, err := ParseCSR(pemBytes)
	if err != nil {
		return err
	}
	return req.CheckSignature()
}

func validateCertificate(pemData []byte) error {
	if len(pemData) == 0 {
		return nil
	}
	blocks := 0
	for {
		block, rest := pem.Decode(pemData)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("only CERTIFICATE PEM blocks are allowed, found %q", block.Type)
		}
		if len(block.Headers) != 0 {
			return fmt.Errorf("no PEM block headers are permitted")
		}
		blocks++
		certs, err := x509.ParseCertificates(block.Bytes)
		if err != nil {
			return err
		}
		if len(certs) == 0 {
			return fmt.Errorf("found CERTIFICATE PEM block containing 0 certificates")
		}
		pemData = rest
	}
	if blocks == 0 {
		return fmt.Errorf("must contain at least one CERTIFICATE PEM block")
	}
	return nil
}

// ValidateCertificateSigningRequestCreate is upstream's: a PKCS#10
// request with a valid signature, known usages each once, a signer name,
// expirationSeconds of at least 600 and consistent conditions.
func ValidateCertificateSigningRequestCreate(csr *certificatesv1.CertificateSigningRequest) field.ErrorList {
	return validateCSR(csr, optionsFor(csr, nil))
}

// ValidateCertificateSigningRequestUpdate is upstream's for the main
// resource: neither approval conditions nor the certificate may change.
func ValidateCertificateSigningRequestUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	return validateCSRUpdate(csr, old, optionsFor(csr, old))
}

// ValidateCertificateSigningRequestStatusUpdate is upstream's for
// /status: the certificate may be set once.
func ValidateCertificateSigningRequestStatusUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	o := optionsFor(csr, old)
	o.allowSettingCertificate = true
	return validateCSRUpdate(csr, old, o)
}

// ValidateCertificateSigningRequestApprovalUpdate is upstream's for
// /approval: the Approved and Denied conditions may be added.
func ValidateCertificateSigningRequestApprovalUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	o := optionsFor(csr, old)
	o.allowSettingApprovalConditions = true
	return validateCSRUpdate(csr, old, o)
}

func validateCSR(csr *certificatesv1.CertificateSigningRequest, o csrOptions) field.ErrorList {
	var allErrs field.ErrorList
	specPath := field.NewPath("spec")
	if err := validateCSRRequest(csr.Spec.Request); err != nil {
		allErrs = append(allErrs, field.Invalid(specPath.Child("request"), csr.Spec.Request, err.Error()))
	}
	if len(csr.Spec.Usages) == 0 {
		allErrs = append(allErrs, field.Required(specPath.Child("usages"), ""))
	}
	if !o.allowUnknownUsages {
		for i, u := range csr.Spec.Usages {
			if !allValidUsages.Has(u) {
				allErrs = append(allErrs, field.NotSupported(specPath.Child("usages").Index(i), u, sets.List(allValidUsages)))
			}
		}
	}
	if !o.allowDuplicateUsages {
		seen := map[certificatesv1.KeyUsage]bool{}
		for i, u := range csr.Spec.Usages {
			if seen[u] {
				allErrs = append(allErrs, field.Duplicate(specPath.Child("usages").Index(i), u))
			}
			seen[u] = true
		}
	}
	if !o.allowLegacySignerName && csr.Spec.SignerName == legacyUnknownSignerName {
		allErrs = append(allErrs, field.Invalid(specPath.Child("signerName"), csr.Spec.SignerName, "the legacy signerName is not allowed via this API version"))
	} else {
		allErrs = append(allErrs, ValidateSignerName(specPath.Child("signerName"), csr.Spec.SignerName)...)
	}
	if csr.Spec.ExpirationSeconds != nil && *csr.Spec.ExpirationSeconds < 600 {
		allErrs = append(allErrs, field.Invalid(specPath.Child("expirationSeconds"), *csr.Spec.ExpirationSeconds, "may not specify a duration less than 600 seconds (10 minutes)"))
	}
	allErrs = append(allErrs, validateCSRConditions(field.NewPath("status", "conditions"), csr, o)...)
	if !o.allowArbitraryCertificate {
		if err := validateCertificate(csr.Status.Certificate); err != nil {
			allErrs = append(allErrs, field.Invalid(field.NewPath("status", "certificate"), "<certificate data>", err.Error()))
		}
	}
	return allErrs
}

func validateCSRConditions(fldPath *field.Path, csr *certificatesv1.CertificateSigningRequest, o csrOptions) field.ErrorList {
	var allErrs field.ErrorList
	seen := map[certificatesv1.RequestConditionType]bool{}
	approved, denied := false, false
	for i, c := range csr.Status.Conditions {
		if !o.allowEmptyConditionType && c.Type == "" {
			allErrs = append(allErrs, field.Required(fldPath.Index(i).Child("type"), ""))
		}
		allowed := allStatusValues
		if trueConditionTypes.Has(c.Type) {
			allowed = trueStatusOnly
		}
		switch {
		case c.Status == "":
			allErrs = append(allErrs, field.Required(fldPath.Index(i).Child("status"), ""))
		case !allowed.Has(string(c.Status)):
			allErrs = append(allErrs, field.NotSupported(fldPath.Index(i).Child("status"), c.Status, sets.List(allowed)))
		}
		if !o.allowBothApprovedAndDenied {
			switch c.Type {
			case certificatesv1.CertificateApproved:
				approved = true
				if denied {
					allErrs = append(allErrs, field.Invalid(fldPath, c.Type, "Approved and Denied conditions are mutually exclusive"))
				}
			case certificatesv1.CertificateDenied:
				denied = true
				if approved {
					allErrs = append(allErrs, field.Invalid(fldPath, c.Type, "Approved and Denied conditions are mutually exclusive"))
				}
			}
		}
		if !o.allowDuplicateConditionTypes {
			if seen[c.Type] {
				allErrs = append(allErrs, field.Duplicate(fldPath.Index(i).Child("type"), c.Type))
			}
			seen[c.Type] = true
		}
	}
	return allErrs
}

func validateCSRUpdate(csr, old *certificatesv1.CertificateSigningRequest, o csrOptions) field.ErrorList {
	allErrs := validateCSR(csr, o)
	condPath := field.NewPath("status", "conditions")
	// Approved, Denied and Failed are never removed.
	for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed} {
		if len(findConditions(csr, t)) < len(findConditions(old, t)) {
			allErrs = append(allErrs, field.Forbidden(condPath, fmt.Sprintf("updates may not remove a condition of type %q", t)))
		}
	}
	if !o.allowSettingApprovalConditions {
		for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
			oldC, newC := findConditions(old, t), findConditions(csr, t)
			switch {
			case len(newC) < len(oldC):
				// refused above
			case len(newC) > len(oldC):
				allErrs = append(allErrs, field.Forbidden(condPath, fmt.Sprintf("updates may not add a condition of type %q", t)))
			case !apiequality.Semantic.DeepEqual(oldC, newC):
				allErrs = append(allErrs, field.Forbidden(condPath, fmt.Sprintf("updates may not modify a condition of type %q\n%v", t, diff.Diff(oldC, newC))))
			}
		}
	}
	if !bytes.Equal(csr.Status.Certificate, old.Status.Certificate) {
		if !o.allowSettingCertificate {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("status", "certificate"), "updates may not set certificate content"))
		} else if len(old.Status.Certificate) > 0 {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("status", "certificate"), "updates may not modify existing certificate content"))
		}
	}
	return append(allErrs, apivalidation.ValidateObjectMetaUpdate(&csr.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
}

func findConditions(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) []certificatesv1.CertificateSigningRequestCondition {
	var out []certificatesv1.CertificateSigningRequestCondition
	for _, c := range csr.Status.Conditions {
		if c.Type == t {
			out = append(out, c)
		}
	}
	return out
}

// optionsFor is upstream's getValidationOptions: old is nil on create.
func optionsFor(csr, old *certificatesv1.CertificateSigningRequest) csrOptions {
	if old == nil {
		return csrOptions{}
	}
	hasType := func(t certificatesv1.RequestConditionType) bool { return len(findConditions(old, t)) > 0 }
	dupTypes, emptyType := false, false
	seen := map[certificatesv1.RequestConditionType]bool{}
	for _, c := range old.Status.Conditions {
		dupTypes = dupTypes || seen[c.Type]
		emptyType = emptyType || c.Type == ""
		seen[c.Type] = true
	}
	dupUsages, unknownUsages := false, false
	seenU := map[certificatesv1.KeyUsage]bool{}
	for _, u := range old.Spec.Usages {
		dupUsages = dupUsages || seenU[u]
		unknownUsages = unknownUsages || !allValidUsages.Has(u)
		seenU[u] = true
	}
	return csrOptions{
		allowBothApprovedAndDenied:   hasType(certificatesv1.CertificateApproved) && hasType(certificatesv1.CertificateDenied),
		allowLegacySignerName:        old.Spec.SignerName == legacyUnknownSignerName,
		allowDuplicateConditionTypes: dupTypes,
		allowEmptyConditionType:      emptyType,
		// An update that leaves the certificate alone, or one of a stored
		// object whose certificate is already bad, is not judged on it.
		allowArbitraryCertificate: bytes.Equal(csr.Status.Certificate, old.Status.Certificate) || validateCertificate(old.Status.Certificate) != nil,
		allowUnknownUsages:        unknownUsages,
		allowDuplicateUsages:      dupUsages,
	}
}

var (
	errOrganizationNotSystemNodes = errors.New("subject organization is not system:nodes")
	errCommonNameNotSystemNode    = errors.New("subject common name does not begin with system:node:")
	errDNSOrIPSANRequired         = errors.New("DNS or IP subjectAltName is required")
	errDNSSANNotAllowed           = errors.New("DNS subjectAltNames are not allowed")
	errEmailSANNotAllowed         = errors.New("Email subjectAltNames are not allowed")
	errIPSANNotAllowed            = errors.New("IP subjectAltNames are not allowed")
	errURISANNotAllowed           = errors.New("URI subjectAltNames are not allowed")
)

// usagesAre says usages are want, in any order, or wantNoRSA (a key that
// is not RSA needs no key encipherment).
func usagesAre(usages []certificatesv1.KeyUsage, want, wantNoRSA []certificatesv1.KeyUsage) bool {
	got := sets.New(usages...)
	return got.Equal(sets.New(want...)) || got.Equal(sets.New(wantNoRSA...))
}

// ValidateKubeletClientCSR is upstream's: CN system:node:<name>, O
// system:nodes only, no SANs, client auth usages.
func ValidateKubeletClientCSR(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	if !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		return errOrganizationNotSystemNodes
	}
	switch {
	case len(req.DNSNames) > 0:
		return errDNSSANNotAllowed
	case len(req.EmailAddresses) > 0:
		return errEmailSANNotAllowed
	case len(req.IPAddresses) > 0:
		return errIPSANNotAllowed
	case len(req.URIs) > 0:
		return errURISANNotAllowed
	}
	if !strings.HasPrefix(req.Subject.CommonName, "system:node:") {
		return errCommonNameNotSystemNode
	}
	want := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}
	if !usagesAre(usages, want, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}) {
		return fmt.Errorf("usages did not match %v", sets.List(sets.New(want...)))
	}
	return nil
}

// ValidateKubeletServingCSR is upstream's: O system:nodes only, a DNS or
// IP SAN and no other, CN system:node:<name>, server auth usages.
func ValidateKubeletServingCSR(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	if !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		return errOrganizationNotSystemNodes
	}
	switch {
	case len(req.DNSNames) == 0 && len(req.IPAddresses) == 0:
		return errDNSOrIPSANRequired
	case len(req.EmailAddresses) > 0:
		return errEmailSANNotAllowed
	case len(req.URIs) > 0:
		return errURISANNotAllowed
	}
	want := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth}
	if !usagesAre(usages, want, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}) {
		return fmt.Errorf("usages did not match %v", sets.List(sets.New(want...)))
	}
	if !strings.HasPrefix(req.Subject.CommonName, "system:node:") {
		return errCommonNameNotSystemNode
	}
	return nil
}
