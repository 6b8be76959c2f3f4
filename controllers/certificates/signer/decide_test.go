package signer

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func csrFor(t *testing.T, signer string, subject pkix.Name, usages []certificatesv1.KeyUsage, conditions ...certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		t.Fatal(err)
	}
	c := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
		Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), SignerName: signer, Usages: usages,
	}}
	for _, ct := range conditions {
		c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: ct, Status: corev1.ConditionTrue})
	}
	return c
}

func TestDecide(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	client := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	node := pkix.Name{CommonName: "system:node:n", Organization: []string{"system:nodes"}}
	approved := certificatesv1.CertificateApproved
	for _, tc := range []struct {
		name    string
		csr     *certificatesv1.CertificateSigningRequest
		want    Action
		message string
	}{
		{"pending", csrFor(t, certificatesv1.KubeAPIServerClientSignerName, pkix.Name{CommonName: "u"}, client), Nothing, ""},
		{"approved client", csrFor(t, certificatesv1.KubeAPIServerClientSignerName, pkix.Name{CommonName: "u"}, client, approved), Sign, ""},
		{"denied", csrFor(t, certificatesv1.KubeAPIServerClientSignerName, pkix.Name{CommonName: "u"}, client, certificatesv1.CertificateDenied), Nothing, ""},
		{"already failed", csrFor(t, certificatesv1.KubeAPIServerClientSignerName, pkix.Name{CommonName: "u"}, client, approved, certificatesv1.CertificateFailed), Nothing, ""},
		{"another signer's", csrFor(t, "example.com/signer", pkix.Name{CommonName: "u"}, client, approved), Nothing, ""},
		{"client without client auth", csrFor(t, certificatesv1.KubeAPIServerClientSignerName, pkix.Name{CommonName: "u"}, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature}, approved), Fail, "missing required usage for client certificate: client auth"},
		{"client with server auth", csrFor(t, certificatesv1.KubeAPIServerClientSignerName, pkix.Name{CommonName: "u"}, append(client, certificatesv1.UsageServerAuth), approved), Fail, "invalid usage for client certificate: server auth"},
		{"kubelet client", csrFor(t, certificatesv1.KubeAPIServerClientKubeletSignerName, node, client, approved), Sign, ""},
		{"kubelet client not of system:nodes", csrFor(t, certificatesv1.KubeAPIServerClientKubeletSignerName, pkix.Name{CommonName: "system:node:n"}, client, approved), Fail, "subject organization is not system:nodes"},
		{"kubelet client not a node", csrFor(t, certificatesv1.KubeAPIServerClientKubeletSignerName, pkix.Name{CommonName: "n", Organization: []string{"system:nodes"}}, client, approved), Fail, "subject common name does not begin with system:node:"},
		{"kubelet serving without SANs", csrFor(t, certificatesv1.KubeletServingSignerName, node, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}, approved), Fail, "DNS or IP subjectAltName is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Decide(tc.csr, 0, now)
			if err != nil {
				t.Fatal(err)
			}
			if d.Action != tc.want || !strings.Contains(d.Message, tc.message) {
				t.Errorf("Decide = %v %q, want %v %q", d.Action, d.Message, tc.want, tc.message)
			}
			if d.Action == Sign && (!d.NotBefore.Equal(now.Add(-Backdate)) || !d.NotAfter.Equal(now.Add(DefaultMaxTTL-Backdate))) {
				t.Errorf("validity %v to %v, want from 5 minutes before now to a year less 5 minutes", d.NotBefore, d.NotAfter)
			}
		})
	}
}

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		name      string
		requested *int32
		max, want time.Duration
	}{
		{"none asked: the maximum", nil, time.Hour, time.Hour},
		{"none asked, no maximum: a year", nil, 0, DefaultMaxTTL},
		{"shorter than the maximum", ptr.To[int32](1800), time.Hour, 30 * time.Minute},
		{"longer than the maximum", ptr.To[int32](7200), time.Hour, time.Hour},
		{"under 10 minutes", ptr.To[int32](60), time.Hour, MinDuration},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Duration(tc.requested, tc.max); got != tc.want {
				t.Errorf("Duration = %v, want %v", got, tc.want)
			}
		})
	}
}
