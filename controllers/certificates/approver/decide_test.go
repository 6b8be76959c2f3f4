package approver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"slices"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
)

func TestCandidates(t *testing.T) {
	request := func(subject pkix.Name) []byte {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	}
	node := pkix.Name{CommonName: "system:node:n", Organization: []string{"system:nodes"}}
	csr := func(requestor, signer string, subject pkix.Name, change ...func(*certificatesv1.CertificateSigningRequest)) *certificatesv1.CertificateSigningRequest {
		c := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: request(subject), SignerName: signer, Username: requestor,
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		}}
		for _, f := range change {
			f(c)
		}
		return c
	}
	for _, tc := range []struct {
		name string
		csr  *certificatesv1.CertificateSigningRequest
		want []string // subresources of the reviews, in order
	}{
		{"a bootstrap token's node client request", csr("system:bootstrap:abcdef", certificatesv1.KubeAPIServerClientKubeletSignerName, node), []string{"nodeclient"}},
		{"a node renewing its own", csr("system:node:n", certificatesv1.KubeAPIServerClientKubeletSignerName, node), []string{"selfnodeclient", "nodeclient"}},
		{"another signer", csr("system:node:n", certificatesv1.KubeAPIServerClientSignerName, node), nil},
		{"not a node's subject", csr("u", certificatesv1.KubeAPIServerClientKubeletSignerName, pkix.Name{CommonName: "u"}), nil},
		{"already approved", csr("system:node:n", certificatesv1.KubeAPIServerClientKubeletSignerName, node, func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
		}), nil},
		{"already denied", csr("system:node:n", certificatesv1.KubeAPIServerClientKubeletSignerName, node, func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue}}
		}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Candidates(tc.csr)
			if err != nil {
				t.Fatal(err)
			}
			var subs []string
			for _, r := range got {
				subs = append(subs, r.Permission.Subresource)
				if sar := Review(tc.csr, r); sar.Spec.User != tc.csr.Spec.Username || sar.Spec.ResourceAttributes.Verb != "create" {
					t.Errorf("review %+v does not ask for the requestor's create", sar.Spec)
				}
			}
			if !slices.Equal(subs, tc.want) {
				t.Errorf("candidates %v, want %v", subs, tc.want)
			}
		})
	}
}
