package cleaner

import (
	"crypto/x509"
	"encoding/pem"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Upstream's deadlines (pkg/controller/certificates/cleaner).
const (
	ApprovedExpiration = time.Hour
	DeniedExpiration   = time.Hour
	PendingExpiration  = 24 * time.Hour
)

// Due is upstream's cleaner decision as a time: when csr is to be
// deleted. An issued request goes an hour after its approval or when its
// certificate expires; a denied or failed one an hour after; a pending
// one (no conditions at all) a day after its creation; an approved one
// never issued a day after its approval. The zero time is never.
func Due(csr *certificatesv1.CertificateSigningRequest) time.Time {
	var due time.Time
	earliest := func(t metav1.Time, d time.Duration) {
		if t.IsZero() {
			return
		}
		if at := t.Add(d); due.IsZero() || at.Before(due) {
			due = at
		}
	}
	issued := len(csr.Status.Certificate) > 0
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			if issued {
				earliest(c.LastUpdateTime, ApprovedExpiration)
				if notAfter, ok := certificateNotAfter(csr.Status.Certificate); ok {
					earliest(metav1.NewTime(notAfter), 0)
				}
			} else {
				earliest(c.LastUpdateTime, PendingExpiration)
			}
		case certificatesv1.CertificateDenied:
			earliest(c.LastUpdateTime, DeniedExpiration)
		case certificatesv1.CertificateFailed:
			earliest(c.LastUpdateTime, DeniedExpiration)
		}
	}
	if len(csr.Status.Conditions) == 0 {
		earliest(csr.CreationTimestamp, PendingExpiration)
	}
	return due
}

func certificateNotAfter(certPEM []byte) (time.Time, bool) {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return time.Time{}, false
	}
	certs, err := x509.ParseCertificates(block.Bytes)
	if err != nil || len(certs) == 0 {
		return time.Time{}, false
	}
	return certs[0].NotAfter, true
}
