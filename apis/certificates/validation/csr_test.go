package validation

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func pemRequest(t *testing.T, subject pkix.Name, dns ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject, DNSNames: dns}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func pemCertificate(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func condition(t certificatesv1.RequestConditionType) certificatesv1.CertificateSigningRequestCondition {
	return certificatesv1.CertificateSigningRequestCondition{Type: t, Status: corev1.ConditionTrue}
}

func errorsOf(errs []string) string { return strings.Join(errs, "; ") }

func TestValidateCertificateSigningRequestCreate(t *testing.T) {
	req := pemRequest(t, pkix.Name{CommonName: "x"})
	valid := func() *certificatesv1.CertificateSigningRequest {
		return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: req, SignerName: "example.com/signer", Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		}}
	}
	for _, tc := range []struct {
		name   string
		change func(c *certificatesv1.CertificateSigningRequest)
		want   []string // "<type> <field>"
	}{
		{"valid", func(*certificatesv1.CertificateSigningRequest) {}, nil},
		{"a request that is not PEM", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = []byte("junk") }, []string{"FieldValueInvalid spec.request"}},
		{"no usages", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Usages = nil }, []string{"FieldValueRequired spec.usages"}},
		{"an unknown usage", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Usages = append(c.Spec.Usages, "bogus") }, []string{"FieldValueNotSupported spec.usages[2]"}},
		{"a usage twice", func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Usages = append(c.Spec.Usages, certificatesv1.UsageClientAuth)
		}, []string{"FieldValueDuplicate spec.usages[2]"}},
		{"no signer", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "" }, []string{"FieldValueRequired spec.signerName"}},
		{"a signer without a path", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example.com" }, []string{"FieldValueInvalid spec.signerName"}},
		{"the legacy signer", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "kubernetes.io/legacy-unknown" }, []string{"FieldValueInvalid spec.signerName"}},
		{"under 10 minutes", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.ExpirationSeconds = ptr.To[int32](599) }, []string{"FieldValueInvalid spec.expirationSeconds"}},
		{"10 minutes", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.ExpirationSeconds = ptr.To[int32](600) }, nil},
		{"approved and denied", func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{condition(certificatesv1.CertificateApproved), condition(certificatesv1.CertificateDenied)}
		}, []string{"FieldValueInvalid status.conditions"}},
		{"approved False", func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionFalse}}
		}, []string{"FieldValueNotSupported status.conditions[0].status"}},
		{"a condition twice", func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{condition("Custom"), condition("Custom")}
		}, []string{"FieldValueDuplicate status.conditions[1].type"}},
		{"a condition without type or status", func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{}}
		}, []string{"FieldValueRequired status.conditions[0].type", "FieldValueRequired status.conditions[0].status"}},
		{"a certificate that is not one", func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = []byte("junk") }, []string{"FieldValueInvalid status.certificate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.change(c)
			var got []string
			for _, e := range ValidateCertificateSigningRequestCreate(c) {
				got = append(got, string(e.Type)+" "+e.Field)
			}
			if errorsOf(got) != errorsOf(tc.want) {
				t.Errorf("errors %v, want %v", got, tc.want)
			}
		})
	}
}

func TestValidateCertificateSigningRequestUpdates(t *testing.T) {
	cert := pemCertificate(t)
	old := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "c", ResourceVersion: "1"}, Spec: certificatesv1.CertificateSigningRequestSpec{
		Request: pemRequest(t, pkix.Name{CommonName: "x"}), SignerName: "example.com/signer", Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth},
	}}
	approved := old.DeepCopy()
	approved.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{condition(certificatesv1.CertificateApproved)}
	issued := approved.DeepCopy()
	issued.Status.Certificate = cert
	with := func(c *certificatesv1.CertificateSigningRequest, change func(*certificatesv1.CertificateSigningRequest)) *certificatesv1.CertificateSigningRequest {
		c = c.DeepCopy()
		change(c)
		return c
	}
	type validate func(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList
	main, status, approval := ValidateCertificateSigningRequestUpdate, ValidateCertificateSigningRequestStatusUpdate, ValidateCertificateSigningRequestApprovalUpdate
	for _, tc := range []struct {
		name     string
		validate validate
		obj, old *certificatesv1.CertificateSigningRequest
		want     string // a message the errors contain; "" for none
	}{
		{"approval adds Approved", approval, approved, old, ""},
		{"the main resource adds Approved", main, approved, old, `updates may not add a condition of type "Approved"`},
		{"status adds Approved", status, approved, old, `updates may not add a condition of type "Approved"`},
		{"approval removes Approved", approval, old, approved, `updates may not remove a condition of type "Approved"`},
		{"status sets the certificate", status, issued, approved, ""},
		{"approval sets the certificate", approval, issued, approved, "updates may not set certificate content"},
		{"status changes the certificate", status, with(issued, func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = pemCertificate(t) }), issued, "updates may not modify existing certificate content"},
		{"status adds Failed", status, with(approved, func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = append(c.Status.Conditions, condition(certificatesv1.CertificateFailed))
		}), approved, ""},
		{"approval modifies Approved", approval, with(approved, func(c *certificatesv1.CertificateSigningRequest) { c.Status.Conditions[0].Reason = "Other" }), approved, ""},
		{"status modifies Approved", status, with(approved, func(c *certificatesv1.CertificateSigningRequest) { c.Status.Conditions[0].Reason = "Other" }), approved, `updates may not modify a condition of type "Approved"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.validate(tc.obj, tc.old).ToAggregate()
			if got == nil {
				if tc.want != "" {
					t.Errorf("no errors, want %q", tc.want)
				}
				return
			}
			if tc.want == "" || !strings.Contains(got.Error(), tc.want) {
				t.Errorf("errors %q, want %q", got, tc.want)
			}
		})
	}
}
