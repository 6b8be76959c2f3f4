package pki

import (
	"crypto/tls"
	"path/filepath"
	"time"
)

// Files of the front-proxy CA, beside the cluster CA, as kubeadm's
// front-proxy-ca: extension API servers trust it, and only it, to vouch
// for the user in a request's X-Remote-* headers.
const (
	FrontProxyCACertFile = "front-proxy-ca.crt"
	FrontProxyCAKeyFile  = "front-proxy-ca.key"
)

// FrontProxyClientCommonName is the name of the client certificate the
// aggregation layer presents to extension API servers, which they find in
// requestheader-allowed-names (kubeadm's name).
const FrontProxyClientCommonName = "front-proxy-client"

// FrontProxy is the aggregation layer's identity towards extension API
// servers.
type FrontProxy struct {
	// CAPEM is the front-proxy CA, published as
	// requestheader-client-ca-file.
	CAPEM []byte
	// Client is a certificate of that CA for FrontProxyClientCommonName,
	// kept in memory only (each start issues a new one).
	Client tls.Certificate
}

// EnsureFrontProxy loads (or makes) the front-proxy CA in dir and issues
// the front-proxy client certificate from it. The CA is a separate one
// from the cluster CA: a client certificate of the cluster CA (any user's)
// must not be able to claim another user's identity to an extension
// server through the headers.
func EnsureFrontProxy(dir string) (*FrontProxy, error) {
	ca, err := ensureCAFiles(filepath.Join(dir, FrontProxyCACertFile), filepath.Join(dir, FrontProxyCAKeyFile), "kite-front-proxy-ca")
	if err != nil {
		return nil, err
	}
	b := &Bundle{ca: ca, now: time.Now}
	client, err := b.Issue(IssueOptions{CommonName: FrontProxyClientCommonName, Client: true})
	if err != nil {
		return nil, err
	}
	return &FrontProxy{CAPEM: ca.certPEM, Client: client}, nil
}
