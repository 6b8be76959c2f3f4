package cleaner

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDue(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(created.Add(d)) }
	certExpiring := func(notAfter time.Time) []byte {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: created, NotAfter: notAfter}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	}
	cond := func(ct certificatesv1.RequestConditionType, updated metav1.Time) certificatesv1.CertificateSigningRequestCondition {
		return certificatesv1.CertificateSigningRequestCondition{Type: ct, Status: corev1.ConditionTrue, LastUpdateTime: updated}
	}
	for _, tc := range []struct {
		name        string
		conditions  []certificatesv1.CertificateSigningRequestCondition
		certificate []byte
		want        time.Time
	}{
		{"pending: a day after creation", nil, nil, created.Add(PendingExpiration)},
		{"denied: an hour after", []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateDenied, at(time.Minute))}, nil, created.Add(time.Minute + DeniedExpiration)},
		{"failed: an hour after", []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, at(time.Minute)), cond(certificatesv1.CertificateFailed, at(2*time.Minute))}, nil, created.Add(2*time.Minute + DeniedExpiration)},
		{"approved, never issued: a day after", []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, at(time.Minute))}, nil, created.Add(time.Minute + PendingExpiration)},
		{"issued: an hour after approval", []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, at(time.Minute))}, certExpiring(created.Add(48 * time.Hour)), created.Add(time.Minute + ApprovedExpiration)},
		{"issued, expiring first: at expiry", []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, at(time.Minute))}, certExpiring(created.Add(30 * time.Minute)), created.Add(30 * time.Minute)},
		{"a custom condition and no time: never", []certificatesv1.CertificateSigningRequestCondition{{Type: "Custom", Status: corev1.ConditionTrue}}, nil, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
			csr.Status.Conditions, csr.Status.Certificate = tc.conditions, tc.certificate
			if got := Due(csr); !got.Equal(tc.want) {
				t.Errorf("Due = %v, want %v", got, tc.want)
			}
		})
	}
}
