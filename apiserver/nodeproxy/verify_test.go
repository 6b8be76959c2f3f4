package nodeproxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"
)

// TestVerifyAgentCertificate: what the API server accepts of an agent's
// serving certificate chain when it dials 127.0.0.1.
func TestVerifyAgentCertificate(t *testing.T) {
	now := time.Now()
	ca, caKey := certificate(t, nil, nil, true, nil, now.Add(-time.Hour), now.Add(time.Hour))
	other, otherKey := certificate(t, nil, nil, true, nil, now.Add(-time.Hour), now.Add(time.Hour))
	local := []net.IP{net.ParseIP("127.0.0.1")}
	issued, _ := certificate(t, ca, caKey, false, local, now.Add(-time.Hour), now.Add(time.Hour))
	expired, _ := certificate(t, ca, caKey, false, local, now.Add(-2*time.Hour), now.Add(-time.Hour))
	elsewhere, _ := certificate(t, ca, caKey, false, []net.IP{net.ParseIP("10.0.0.9")}, now.Add(-time.Hour), now.Add(time.Hour))
	foreign, _ := certificate(t, other, otherKey, false, local, now.Add(-time.Hour), now.Add(time.Hour))
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, tc := range []struct {
		name     string
		chain    []*x509.Certificate
		required bool
		wantErr  string
	}{
		{"the CA's certificate for the address", []*x509.Certificate{issued}, false, ""},
		{"the CA's certificate for another address", []*x509.Certificate{elsewhere}, false, "certificate is valid for 10.0.0.9, not 127.0.0.1"},
		{"the CA's certificate, expired", []*x509.Certificate{expired}, false, "expired"},
		{"another authority's, not required", []*x509.Certificate{foreign, other}, false, ""},
		{"another authority's, required", []*x509.Certificate{foreign, other}, true, "unknown authority"},
		{"the CA's when required", []*x509.Certificate{issued}, true, ""},
		{"no certificate", nil, false, "no serving certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifyAgentCertificate(tc.chain, "127.0.0.1", roots, tc.required, now)
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("= %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// certificate is a CA (isCA) or a serving certificate for ips, signed
// by parent (itself when nil).
func certificate(t *testing.T, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, isCA bool, ips []net.IP, notBefore, notAfter time.Time) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(now()), Subject: pkix.Name{CommonName: "x"}, NotBefore: notBefore, NotAfter: notAfter,
		IPAddresses: ips, BasicConstraintsValid: true, IsCA: isCA}
	if isCA {
		tmpl.KeyUsage = x509.KeyUsageCertSign
	} else {
		tmpl.KeyUsage, tmpl.ExtKeyUsage = x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

func now() int64 { return time.Now().UnixNano() }
