package pki_test

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kite-project/kite/pki"
)

// TestEnsureClientKeepsAGoodCertificate: the client certificate on disk is
// kept while it is the one asked for, and issued again when it names
// another subject or when the CA changed under it; it always chains to the
// CA, is for client authentication, and its key is 0600.
func TestEnsureClientKeepsAGoodCertificate(t *testing.T) {
	tests := []struct {
		name    string
		between func(t *testing.T, dir string)
		second  string // common name asked the second time
		kept    bool
	}{
		{"same name", func(*testing.T, string) {}, "etcd-client", true},
		{"another name", func(*testing.T, string) {}, "other-client", false},
		{"a new CA", func(t *testing.T, dir string) {
			for _, f := range []string{pki.CACertFile, pki.CAKeyFile} {
				if err := os.Remove(filepath.Join(dir, f)); err != nil {
					t.Fatal(err)
				}
			}
		}, "etcd-client", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "pki")
			ensure := func(name string) []byte {
				b, err := pki.Ensure(dir, pki.Options{})
				if err != nil {
					t.Fatal(err)
				}
				certPath, keyPath, err := b.EnsureClient(name)
				if err != nil {
					t.Fatal(err)
				}
				pair, err := tls.LoadX509KeyPair(certPath, keyPath)
				if err != nil {
					t.Fatal(err)
				}
				roots := x509.NewCertPool()
				roots.AppendCertsFromPEM(b.CAPEM)
				if _, err := pair.Leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
					t.Errorf("client certificate does not verify as a client of the CA: %v", err)
				}
				if pair.Leaf.Subject.CommonName != name {
					t.Errorf("common name %q, want %q", pair.Leaf.Subject.CommonName, name)
				}
				if fi, err := os.Stat(keyPath); err != nil || fi.Mode().Perm() != 0o600 {
					t.Errorf("key %s: %v %v, want 0600", keyPath, fi.Mode(), err)
				}
				return pair.Certificate[0]
			}
			first := ensure("etcd-client")
			tc.between(t, dir)
			second := ensure(tc.second)
			if kept := slices.Equal(first, second); kept != tc.kept {
				t.Errorf("certificate kept: %v, want %v", kept, tc.kept)
			}
		})
	}
}
