package signer

import (
	"crypto/x509"
	"fmt"
	"slices"
	"sort"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kite-project/kite/apis/certificates/validation"
)

// Upstream's signing policy (pkg/controller/certificates/signer and
// authority): certificates start 5 minutes in the past, so that a clock a
// little behind accepts them; one of 8 hours or more loses those 5 minutes
// at its end; a requested duration shorter than 10 minutes (twice the
// backdate) is raised to 10.
const (
	Backdate      = 5 * time.Minute
	short         = 8 * time.Hour
	MinDuration   = 10 * time.Minute
	DefaultMaxTTL = 365 * 24 * time.Hour
	failedReason  = "SignerValidationFailure"
)

// Signers are the signer names this controller signs for with the
// cluster CA, as kube-controller-manager's csrsigning controllers.
var Signers = []string{
	certificatesv1.KubeAPIServerClientSignerName,
	certificatesv1.KubeAPIServerClientKubeletSignerName,
	certificatesv1.KubeletServingSignerName,
}

// Action is what Decide says to do with a request.
type Action int

const (
	// Nothing: not approved, failed, already issued, or another signer's.
	Nothing Action = iota
	// Fail the request: it is not one this signer may sign (a Failed
	// condition, reason SignerValidationFailure).
	Fail
	// Sign it.
	Sign
)

// Decision is Decide's answer.
type Decision struct {
	Action Action
	// Message says why a request fails.
	Message string
	// Request is the parsed request to sign, with its usages and
	// validity.
	Request             *x509.CertificateRequest
	KeyUsage            x509.KeyUsage
	ExtKeyUsage         []x509.ExtKeyUsage
	NotBefore, NotAfter time.Time
}

// Decide is upstream's signer.handle for the three kubernetes.io signers:
// an approved request of one of them, not failed nor issued yet, is signed
// when it is what its signer issues (a kubelet's client or serving
// certificate, a client certificate), else failed. maxTTL is
// --cluster-signing-duration. An error is a request that cannot be read
// or carries unknown usages (validation refuses both).
func Decide(csr *certificatesv1.CertificateSigningRequest, maxTTL time.Duration, now time.Time) (Decision, error) {
	if !slices.Contains(Signers, csr.Spec.SignerName) || len(csr.Status.Certificate) > 0 ||
		!hasTrue(csr, certificatesv1.CertificateApproved) || hasTrue(csr, certificatesv1.CertificateDenied) || hasTrue(csr, certificatesv1.CertificateFailed) {
		return Decision{}, nil
	}
	req, err := validation.ParseCSR(csr.Spec.Request)
	if err != nil {
		return Decision{}, fmt.Errorf("unable to parse csr %q: %w", csr.Name, err)
	}
	if err := forSigner(req, csr.Spec.Usages, csr.Spec.SignerName); err != nil {
		return Decision{Action: Fail, Message: err.Error()}, nil
	}
	usage, ext, err := keyUsages(csr.Spec.Usages)
	if err != nil {
		return Decision{}, fmt.Errorf("csr %q: %w", csr.Name, err)
	}
	ttl := Duration(csr.Spec.ExpirationSeconds, maxTTL)
	d := Decision{Action: Sign, Request: req, KeyUsage: usage, ExtKeyUsage: ext, NotBefore: now.Add(-Backdate), NotAfter: now.Add(ttl)}
	if ttl >= short {
		d.NotAfter = now.Add(ttl - Backdate)
	}
	return d, nil
}

// Duration is upstream's signer.duration: the requested expirationSeconds
// within [MinDuration, maxTTL], maxTTL when none is asked for.
func Duration(expirationSeconds *int32, maxTTL time.Duration) time.Duration {
	if maxTTL <= 0 {
		maxTTL = DefaultMaxTTL
	}
	if expirationSeconds == nil {
		return maxTTL
	}
	switch d := time.Duration(*expirationSeconds) * time.Second; {
	case d > maxTTL:
		return maxTTL
	case d < MinDuration:
		return MinDuration
	default:
		return d
	}
}

// forSigner is upstream's per-signer check (isKubeletServing,
// isKubeletClient, isKubeAPIServerClient).
func forSigner(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage, signer string) error {
	switch signer {
	case certificatesv1.KubeletServingSignerName:
		return validation.ValidateKubeletServingCSR(req, usages)
	case certificatesv1.KubeAPIServerClientKubeletSignerName:
		return validation.ValidateKubeletClientCSR(req, usages)
	}
	clientAuth := false
	for _, u := range usages {
		switch u {
		case certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment:
		case certificatesv1.UsageClientAuth:
			clientAuth = true
		default:
			return fmt.Errorf("invalid usage for client certificate: %s", u)
		}
	}
	if !clientAuth {
		return fmt.Errorf("missing required usage for client certificate: %s", certificatesv1.UsageClientAuth)
	}
	return nil
}

func hasTrue(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

var keyUsageOf = map[certificatesv1.KeyUsage]x509.KeyUsage{
	certificatesv1.UsageSigning:           x509.KeyUsageDigitalSignature,
	certificatesv1.UsageDigitalSignature:  x509.KeyUsageDigitalSignature,
	certificatesv1.UsageContentCommitment: x509.KeyUsageContentCommitment,
	certificatesv1.UsageKeyEncipherment:   x509.KeyUsageKeyEncipherment,
	certificatesv1.UsageKeyAgreement:      x509.KeyUsageKeyAgreement,
	certificatesv1.UsageDataEncipherment:  x509.KeyUsageDataEncipherment,
	certificatesv1.UsageCertSign:          x509.KeyUsageCertSign,
	certificatesv1.UsageCRLSign:           x509.KeyUsageCRLSign,
	certificatesv1.UsageEncipherOnly:      x509.KeyUsageEncipherOnly,
	certificatesv1.UsageDecipherOnly:      x509.KeyUsageDecipherOnly,
}

var extKeyUsageOf = map[certificatesv1.KeyUsage]x509.ExtKeyUsage{
	certificatesv1.UsageAny:             x509.ExtKeyUsageAny,
	certificatesv1.UsageServerAuth:      x509.ExtKeyUsageServerAuth,
	certificatesv1.UsageClientAuth:      x509.ExtKeyUsageClientAuth,
	certificatesv1.UsageCodeSigning:     x509.ExtKeyUsageCodeSigning,
	certificatesv1.UsageEmailProtection: x509.ExtKeyUsageEmailProtection,
	certificatesv1.UsageSMIME:           x509.ExtKeyUsageEmailProtection,
	certificatesv1.UsageIPsecEndSystem:  x509.ExtKeyUsageIPSECEndSystem,
	certificatesv1.UsageIPsecTunnel:     x509.ExtKeyUsageIPSECTunnel,
	certificatesv1.UsageIPsecUser:       x509.ExtKeyUsageIPSECUser,
	certificatesv1.UsageTimestamping:    x509.ExtKeyUsageTimeStamping,
	certificatesv1.UsageOCSPSigning:     x509.ExtKeyUsageOCSPSigning,
	certificatesv1.UsageMicrosoftSGC:    x509.ExtKeyUsageMicrosoftServerGatedCrypto,
	certificatesv1.UsageNetscapeSGC:     x509.ExtKeyUsageNetscapeServerGatedCrypto,
}

// keyUsages is upstream's keyUsagesFromStrings: the key usage bits and
// the extended usages, each once, in order.
func keyUsages(usages []certificatesv1.KeyUsage) (x509.KeyUsage, []x509.ExtKeyUsage, error) {
	var ku x509.KeyUsage
	var unknown []certificatesv1.KeyUsage
	ext := map[x509.ExtKeyUsage]bool{}
	for _, u := range usages {
		if v, ok := keyUsageOf[u]; ok {
			ku |= v
		} else if v, ok := extKeyUsageOf[u]; ok {
			ext[v] = true
		} else {
			unknown = append(unknown, u)
		}
	}
	if len(unknown) > 0 {
		return 0, nil, fmt.Errorf("unrecognized usage values: %q", unknown)
	}
	var sorted []x509.ExtKeyUsage
	for e := range ext {
		sorted = append(sorted, e)
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	return ku, sorted, nil
}
