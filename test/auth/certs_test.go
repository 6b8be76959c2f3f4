package auth_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

func TestClientCertificateUserIsWhoSelfSubjectReviewSays(t *testing.T) {
	for _, tc := range []struct {
		name       string
		user       string
		groups     []string
		wantGroups []string
	}{
		{"user with groups", "alice", []string{"devs", "qa"}, []string{"devs", "qa", user.AllAuthenticated}},
		{"user without groups", "bob", nil, []string{user.AllAuthenticated}},
		{"node identity", "system:node:n1", []string{"system:nodes"}, []string{"system:nodes", user.AllAuthenticated}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := shared.AddUser(tc.user, tc.groups)
			if err != nil {
				t.Fatal(err)
			}
			got, err := whoami(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			// Organizations are one DER SET, whose encoding sorts them.
			slices.Sort(got.Groups)
			slices.Sort(tc.wantGroups)
			if got.Username != tc.user || !slices.Equal(got.Groups, tc.wantGroups) {
				t.Errorf("user %q groups %q, want %q %q", got.Username, got.Groups, tc.user, tc.wantGroups)
			}
			if id := got.Extra[user.CredentialIDKey]; len(id) != 1 || len(id[0]) < len("X509SHA256=") || id[0][:len("X509SHA256=")] != "X509SHA256=" {
				t.Errorf("credential id %q, want the certificate's X509SHA256 fingerprint", id)
			}
		})
	}
}

// TestClientCertificateOfAnotherCAIsUnauthorized: a certificate the
// cluster CA did not sign is refused with 401 (not a failed handshake,
// as upstream: the server asks for certificates and the authenticator
// checks them), and so is a server certificate of the cluster CA used as
// a client one.
func TestClientCertificateOfAnotherCAIsUnauthorized(t *testing.T) {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "other-ca"}, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "mallory", Organization: []string{user.SystemPrivilegedGroup}},
		NotBefore:    time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	certPEM, _ := certutil.EncodeCertificates(leaf)
	keyPEM, _ := keyutil.MarshalPrivateKeyToPEM(key)

	cfg, err := shared.AddUser("someone", nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.CertData, cfg.KeyData = certPEM, keyPEM
	_, err = clientFor(t, cfg).CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{})
	if !apierrors.IsUnauthorized(err) {
		t.Fatalf("list with a certificate of another CA: %v, want 401", err)
	}
}
