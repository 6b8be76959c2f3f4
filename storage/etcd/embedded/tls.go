package embedded

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"

	"go.etcd.io/etcd/client/pkg/v3/transport"

	"github.com/kite-project/kite/pki"
)

// The embedded etcd is the API server's store, and nothing else may reach
// it (invariant 8): pods run as host processes, and a plain port on
// 127.0.0.1 would give any of them, and any local user, every Secret and
// every write, around the API server's authentication and authorization.
// So etcd serves clients and peers over TLS only and asks each client for a
// certificate of its own CA, as kubeadm's etcd does. That CA is not the
// cluster's: the cluster CA signs certificates for agents and users, none
// of which may open etcd.

// PKIDir is where, under the data directory, the embedded etcd keeps its
// CA (ca.crt, ca.key), its serving certificate (serving.crt, serving.key)
// and the client certificate of the API server (client.crt, client.key):
// kubeadm's pki/etcd.
const PKIDir = "pki/etcd"

// clientCommonName is the subject of the API server's client certificate,
// kubeadm's name for it.
const clientCommonName = "kube-apiserver-etcd-client"

// TLSFiles are the files a client of the embedded etcd needs: the CA that
// signed its serving certificate, and a client certificate and key of that
// CA. They are the API server's --etcd-cafile, --etcd-certfile and
// --etcd-keyfile.
type TLSFiles struct {
	CAFile, CertFile, KeyFile string
}

// ClientTLSFiles are where the embedded etcd with data directory dataDir
// keeps its client's TLS files (they exist once it has started there).
func ClientTLSFiles(dataDir string) TLSFiles {
	dir := filepath.Join(dataDir, PKIDir)
	return TLSFiles{
		CAFile:   filepath.Join(dir, pki.CACertFile),
		CertFile: filepath.Join(dir, pki.ClientCertFile),
		KeyFile:  filepath.Join(dir, pki.ClientKeyFile),
	}
}

// ClientConfig is a TLS client configuration that presents the client
// certificate and trusts only the etcd CA.
func (f TLSFiles) ClientConfig() (*tls.Config, error) {
	info := transport.TLSInfo{CertFile: f.CertFile, KeyFile: f.KeyFile, TrustedCAFile: f.CAFile}
	cfg, err := info.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: client TLS from %+v: %w", f, err)
	}
	return cfg, nil
}

// ensureCerts makes sure the data directory holds the etcd CA, a serving
// certificate for 127.0.0.1, ::1, localhost and hosts, and the API server's
// client certificate (kept across restarts, so that an API server in
// another process keeps working when etcd restarts). It returns etcd's
// server TLS, which asks every client and peer for a certificate of that
// CA.
func ensureCerts(dataDir string, hosts []string) (transport.TLSInfo, TLSFiles, error) {
	dir := filepath.Join(dataDir, PKIDir)
	b, err := pki.Ensure(dir, pki.Options{Hosts: hosts})
	if err != nil {
		return transport.TLSInfo{}, TLSFiles{}, fmt.Errorf("embedded etcd: certificates in %s: %w", dir, err)
	}
	certFile, keyFile, err := b.EnsureClient(clientCommonName)
	if err != nil {
		return transport.TLSInfo{}, TLSFiles{}, fmt.Errorf("embedded etcd: client certificate in %s: %w", dir, err)
	}
	server := transport.TLSInfo{
		CertFile:       b.ServingCertPath,
		KeyFile:        filepath.Join(dir, pki.ServingKeyFile),
		TrustedCAFile:  b.CACertPath,
		ClientCertAuth: true,
	}
	return server, TLSFiles{CAFile: b.CACertPath, CertFile: certFile, KeyFile: keyFile}, nil
}

// parseURL reads a client or peer URL: https://host:port, where host is an
// IP address or a name; empty is https://127.0.0.1:0. Any other scheme is
// refused: a plain http:// port, loopback or not, is open to every local
// process.
func parseURL(s string) (url.URL, error) {
	if s == "" {
		s = "https://127.0.0.1:0"
	}
	u, err := url.Parse(s)
	if err != nil {
		return url.URL{}, err
	}
	if u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return url.URL{}, errors.New("want https://host:port: the embedded etcd serves only over TLS, to clients with a certificate of its CA")
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil {
		return url.URL{}, fmt.Errorf("want https://host:port: %w", err)
	}
	return *u, nil
}

// certHosts are the hosts of urls that the serving certificate must name
// besides the loopback ones: none for an unspecified address (0.0.0.0,
// ::), which names no host a client could dial.
func certHosts(urls ...url.URL) []string {
	var hosts []string
	for _, u := range urls {
		h := u.Hostname()
		if ip := net.ParseIP(h); ip != nil && ip.IsUnspecified() {
			continue
		}
		hosts = append(hosts, h)
	}
	return hosts
}
