package embedded

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/kite-project/kite/pki"
)

// TestOnlyItsClientCertificateReadsASecret stores a Secret's key as the
// API server does and reads it with clients on 127.0.0.1 that a local
// process or pod could make: none but the one with etcd's client
// certificate gets it (invariant 8).
func TestOnlyItsClientCertificateReadsASecret(t *testing.T) {
	s := mustStart(t, t.TempDir())
	defer s.Close()
	own := mustClient(t, s)
	defer own.Close()
	const key = "/registry/secrets/default/db-password"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := own.Put(ctx, key, "hunter2"); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(s.ClientURLs()[0])
	if err != nil {
		t.Fatal(err)
	}
	if u.Scheme != "https" || u.Hostname() != "127.0.0.1" {
		t.Fatalf("client URL %s, want https on 127.0.0.1", u)
	}
	caPEM, err := os.ReadFile(s.ClientTLS().CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	// A certificate of another CA: the cluster's, which signs the
	// agents' and users' certificates.
	cluster, err := pki.Ensure(filepath.Join(t.TempDir(), "pki"), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	clusterCert, err := cluster.Issue(pki.IssueOptions{CommonName: "system:node:n1", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	ownTLS, err := s.ClientTLS().ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		endpoint string
		tls      *tls.Config
		reads    bool
	}{
		{"plain gRPC to its port", "http://" + u.Host, nil, false},
		{"TLS without a client certificate", "https://" + u.Host, &tls.Config{RootCAs: roots}, false},
		{"a client certificate of the cluster CA", "https://" + u.Host, &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{clusterCert}}, false},
		{"its own client certificate", "https://" + u.Host, ownTLS, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := clientv3.New(clientv3.Config{Endpoints: []string{tc.endpoint}, TLS: tc.tls, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
			if err != nil {
				if tc.reads {
					t.Fatal(err)
				}
				return
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			r, err := c.Get(ctx, key)
			read := err == nil && len(r.Kvs) == 1 && string(r.Kvs[0].Value) == "hunter2"
			if read != tc.reads {
				t.Errorf("read the Secret: %v (err %v), want %v", read, err, tc.reads)
			}
		})
	}
	// The peer port answers nothing without a certificate either.
	for _, l := range s.etcd.Peers {
		addr := l.Addr().String()
		if resp, err := http.Get("http://" + addr + "/members"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Errorf("plain GET of the peer port's /members: 200")
			}
		}
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
		if resp, err := hc.Get("https://" + addr + "/members"); err == nil {
			resp.Body.Close()
			t.Errorf("GET of the peer port's /members without a client certificate: %d, want a refused handshake", resp.StatusCode)
		}
	}
}

// TestClientURLIsHTTPSOnly: every client or peer URL but https://host:port
// is refused before anything starts, loopback or not: a plain port is
// open to every local process.
func TestClientURLIsHTTPSOnly(t *testing.T) {
	tests := []struct {
		url string
		ok  bool
	}{
		{"", true},
		{"https://127.0.0.1:0", true},
		{"https://10.1.2.3:2379", true},
		{"https://[::1]:2379", true},
		{"http://127.0.0.1:2379", false},
		{"http://0.0.0.0:2379", false},
		{"http://10.1.2.3:2379", false},
		{"unix:///tmp/etcd.sock", false},
		{"https://127.0.0.1", false},
		{"https://127.0.0.1:2379/path", false},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			_, err := parseURL(tc.url)
			if (err == nil) != tc.ok {
				t.Errorf("parseURL(%q) = %v, want ok: %v", tc.url, err, tc.ok)
			}
			if tc.ok {
				return
			}
			dir := t.TempDir()
			_, err = Start(context.Background(), Options{DataDir: dir, ClientURL: tc.url})
			if err == nil || !strings.Contains(err.Error(), "https://host:port") {
				t.Errorf("Start with client URL %q: %v, want it refused", tc.url, err)
			}
			_, err = Start(context.Background(), Options{DataDir: dir, PeerURL: tc.url})
			if err == nil || !strings.Contains(err.Error(), "https://host:port") {
				t.Errorf("Start with peer URL %q: %v, want it refused", tc.url, err)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("a refused start left %d entries in the data dir", len(ents))
			}
		})
	}
}

// TestClientCertificateOutlivesARestart: an API server in another process
// reads the client certificate once; etcd restarting on the same data
// directory must keep accepting it, so the files stay as they were.
func TestClientCertificateOutlivesARestart(t *testing.T) {
	dir := t.TempDir()
	s := mustStart(t, dir)
	files := s.ClientTLS()
	if files != ClientTLSFiles(dir) {
		t.Errorf("ClientTLS %+v, want ClientTLSFiles(dir) %+v", files, ClientTLSFiles(dir))
	}
	read := func() string {
		var b strings.Builder
		for _, f := range []string{files.CAFile, files.CertFile, files.KeyFile} {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(data)
		}
		return b.String()
	}
	before := read()
	if fi, err := os.Stat(files.KeyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("client key %s: %v %v, want mode 0600", files.KeyFile, fi.Mode(), err)
	}
	s.Close()
	s = mustStart(t, dir)
	defer s.Close()
	if read() != before {
		t.Error("a restart replaced the CA or the client certificate")
	}
	tlsConfig, err := files.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: s.ClientURLs(), TLS: tlsConfig, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, "/k", "v"); err != nil {
		t.Fatalf("the client certificate from before the restart: %v", err)
	}
}
