package pki_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kite-project/kite/pki"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func read(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEnsureCreatesFilesWithPrivateModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	b, err := pki.Ensure(dir, pki.Options{Hosts: []string{"kite.example", "10.0.0.7"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]os.FileMode{
		pki.CACertFile: 0o644, pki.CAKeyFile: 0o600,
		pki.ServingCertFile: 0o644, pki.ServingKeyFile: 0o600,
	}
	for name, mode := range want {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode().Perm(), mode)
		}
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v, want 0700", fi.Mode().Perm())
	}
	wantHosts := []string{"10.0.0.7", "127.0.0.1", "::1", "kite.example", "localhost"}
	if !slices.Equal(b.Hosts, wantHosts) {
		t.Errorf("hosts %v, want %v", b.Hosts, wantHosts)
	}
	if !bytes.Equal(b.CAPEM, read(t, dir, pki.CACertFile)) {
		t.Error("CAPEM differs from ca.crt")
	}
}

func TestEnsureReusesOrReissues(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name       string
		second     pki.Options
		breakFiles func(t *testing.T, dir string)
		newCA      bool
		newServing bool
	}{
		{name: "same hosts reuse everything", second: pki.Options{Hosts: []string{"a.example"}}},
		{name: "host order and IP spelling do not matter", second: pki.Options{Hosts: []string{"a.example", "0:0:0:0:0:0:0:1"}}},
		{name: "new host reissues serving, keeps CA", second: pki.Options{Hosts: []string{"a.example", "b.example"}}, newServing: true},
		{name: "near expiry reissues serving, keeps CA",
			second: pki.Options{Hosts: []string{"a.example"}, Now: func() time.Time { return now.Add(pki.DefaultServingValidity - 24*time.Hour) }}, newServing: true},
		{name: "missing serving key reissues serving", second: pki.Options{Hosts: []string{"a.example"}},
			breakFiles: func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, pki.ServingKeyFile)) }, newServing: true},
		{name: "missing CA key regenerates both", second: pki.Options{Hosts: []string{"a.example"}},
			breakFiles: func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, pki.CAKeyFile)) }, newCA: true, newServing: true},
		{name: "garbage CA cert regenerates both", second: pki.Options{Hosts: []string{"a.example"}},
			breakFiles: func(t *testing.T, dir string) {
				os.WriteFile(filepath.Join(dir, pki.CACertFile), []byte("garbage"), 0o644)
			}, newCA: true, newServing: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := pki.Ensure(dir, pki.Options{Hosts: []string{"a.example"}, Now: func() time.Time { return now }}); err != nil {
				t.Fatal(err)
			}
			ca1, srv1 := read(t, dir, pki.CACertFile), read(t, dir, pki.ServingCertFile)
			if tc.breakFiles != nil {
				tc.breakFiles(t, dir)
			}
			b, err := pki.Ensure(dir, tc.second)
			if err != nil {
				t.Fatal(err)
			}
			ca2, srv2 := read(t, dir, pki.CACertFile), read(t, dir, pki.ServingCertFile)
			if got := !bytes.Equal(ca1, ca2); got != tc.newCA {
				t.Errorf("CA regenerated = %v, want %v", got, tc.newCA)
			}
			if got := !bytes.Equal(srv1, srv2); got != tc.newServing {
				t.Errorf("serving cert reissued = %v, want %v", got, tc.newServing)
			}
			// Whatever happened, the result must verify against its CA.
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(b.CAPEM)
			leaf, err := x509.ParseCertificate(b.TLSConfig.Certificates[0].Certificate[0])
			if err != nil {
				t.Fatal(err)
			}
			at := time.Now()
			if tc.second.Now != nil {
				at = tc.second.Now()
			}
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "a.example", CurrentTime: at}); err != nil {
				t.Errorf("serving cert does not verify: %v", err)
			}
		})
	}
}

// TestServingCertWorksForLoopbackNames does real TLS handshakes with a
// client that trusts only the generated CA.
func TestServingCertWorksForLoopbackNames(t *testing.T) {
	b, err := pki.Ensure(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	srv.TLS = b.TLSConfig
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below logs
	srv.StartTLS()
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	clientTLS, err := b.ClientTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"127.0.0.1", "localhost"} {
		t.Run(host, func(t *testing.T) {
			tr := &http.Transport{TLSClientConfig: clientTLS.Clone(), DialContext: (&net.Dialer{}).DialContext}
			defer tr.CloseIdleConnections()
			// localhost resolves to 127.0.0.1, where the server listens;
			// the certificate is checked against the name in the URL.
			resp, err := (&http.Client{Transport: tr}).Get("https://" + net.JoinHostPort(host, port) + "/")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if string(body) != "ok" {
				t.Errorf("body %q", body)
			}
		})
	}
	t.Run("wrong name is refused", func(t *testing.T) {
		cfg := clientTLS.Clone()
		cfg.ServerName = "evil.example"
		conn, err := tls.Dial("tcp", srv.Listener.Addr().String(), cfg)
		if err == nil {
			conn.Close()
			t.Fatal("handshake succeeded for a name not in the certificate")
		}
	})
}

func TestEnsureTokenIsStableAndPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", pki.TokenFile)
	tok1, err := pki.EnsureToken(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(tok1) < 40 {
		t.Errorf("token %q too short", tok1)
	}
	tok2, err := pki.EnsureToken(path)
	if err != nil {
		t.Fatal(err)
	}
	if tok1 != tok2 {
		t.Errorf("token changed on second call: %q then %q", tok1, tok2)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token mode %v, want 0600", fi.Mode().Perm())
	}
	other, err := pki.EnsureToken(filepath.Join(t.TempDir(), pki.TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	if other == tok1 {
		t.Error("two data dirs got the same token")
	}
}

// TestEnsureRefusesHostsThatCannotBeSANs checks that a host that is
// neither an IP nor a DNS name is refused before anything is written.
func TestEnsureRefusesHostsThatCannotBeSANs(t *testing.T) {
	for _, tt := range []struct {
		host string
		ok   bool
	}{
		{"10.0.0.7", true},
		{"fd00::7", true},
		{"kite.example", true},
		{"*.kite.example", true},
		{"", false},
		{"kite_example", false},
		{"https://kite.example", false},
		{"10.0.0.7:6443", false},
		{"kite.example.", false},
	} {
		t.Run(tt.host, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "pki")
			_, err := pki.Ensure(dir, pki.Options{Hosts: []string{"a.example", tt.host}})
			if tt.ok {
				if err != nil {
					t.Fatalf("Ensure: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", tt.host)) {
				t.Fatalf("Ensure: %v, want an error naming %q", err, tt.host)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("a refused host left %s behind (stat: %v)", dir, err)
			}
		})
	}
}

// TestIssuedCertificatesChainToTheCA checks what the API server presents
// to agents, and an agent's serving certificate, against the CA.
func TestIssuedCertificatesChainToTheCA(t *testing.T) {
	b, err := pki.Ensure(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(b.CAPEM)
	cases := []struct {
		opts  pki.IssueOptions
		usage x509.ExtKeyUsage
		host  string
	}{
		{pki.IssueOptions{CommonName: "kube-apiserver-kubelet-client", Client: true}, x509.ExtKeyUsageClientAuth, ""},
		{pki.IssueOptions{CommonName: "system:node:n", Hosts: []string{"127.0.0.1", "n"}}, x509.ExtKeyUsageServerAuth, "127.0.0.1"},
	}
	for _, c := range cases {
		cert, err := b.Issue(c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cert.Leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{c.usage}, DNSName: c.host}); err != nil {
			t.Errorf("%s: %v", c.opts.CommonName, err)
		}
		if cert.Leaf.Subject.CommonName != c.opts.CommonName {
			t.Errorf("common name %q, want %q", cert.Leaf.Subject.CommonName, c.opts.CommonName)
		}
		other := x509.ExtKeyUsageServerAuth
		if c.usage == other {
			other = x509.ExtKeyUsageClientAuth
		}
		if _, err := cert.Leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{other}}); err == nil {
			t.Errorf("%s verifies for the other use too", c.opts.CommonName)
		}
	}
}
