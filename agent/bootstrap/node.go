package bootstrap

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/connrotation"
)

// NodeOptions say which node's certificates a Node keeps.
type NodeOptions struct {
	// Dir is the agent's root directory, where Join wrote the kubeconfig
	// and the client certificate. Required.
	Dir string
	// NodeName is the node's name. Required.
	NodeName string
	// ServingHosts are the names and addresses the serving certificate
	// is for: the node's addresses the API server dials (its InternalIP,
	// its hostname). None: no serving certificate is asked for.
	ServingHosts []string
	// RenewAt overrides the rotation deadline of both certificates (for
	// tests); nil is the kubelet's 70-90 % of the life.
	RenewAt func(cert *x509.Certificate) time.Time
}

// Node keeps a joined node's certificates current, as the kubelet with
// rotateCertificates and serverTLSBootstrap: its client certificate,
// renewed as the node itself (the approver approves a node's renewal of
// its own), and its serving certificate, a kubernetes.io/kubelet-serving
// request that waits for a person's approval, as upstream leaves it.
type Node struct {
	Client, Serving *CertificateManager
	config          *rest.Config
	caPEM           []byte
}

// NewNode reads what Join wrote in o.Dir.
func NewNode(o NodeOptions) (*Node, error) {
	path := filepath.Join(o.Dir, KubeconfigFile)
	kc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	base, err := clientcmd.NewDefaultClientConfig(*kc, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("bootstrap: %s: %w", path, err)
	}
	clientOpts := nodeClientCertificate(o.NodeName, filepath.Join(o.Dir, ClientCertificateFile), nil)
	clientOpts.RenewAt = o.RenewAt
	n := &Node{}
	if n.Client, err = NewCertificateManager(clientOpts); err != nil {
		return nil, err
	}
	if n.Client.Current() == nil {
		return nil, fmt.Errorf("bootstrap: no client certificate in %s: join first", clientOpts.File)
	}
	if base.CertFile != clientOpts.File {
		return nil, fmt.Errorf("bootstrap: %s names client certificate %q, not %s", path, base.CertFile, clientOpts.File)
	}
	if n.config, err = rotatingConfig(base, n.Client); err != nil {
		return nil, err
	}
	n.caPEM = base.CAData
	client, err := kubernetes.NewForConfig(n.config)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: client of %s: %w", base.Host, err)
	}
	n.Client.o.Client = client
	if len(o.ServingHosts) == 0 {
		return n, nil
	}
	serving := CertificateOptions{
		Name: "serving", File: filepath.Join(o.Dir, ServingCertificateFile), Client: client, RenewAt: o.RenewAt,
		SignerName: certificatesv1.KubeletServingSignerName,
		Subject:    clientOpts.Subject,
		// An ECDSA key needs no key encipherment (the kubelet's usages
		// for non-RSA keys).
		Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
	}
	for _, h := range o.ServingHosts {
		if ip := net.ParseIP(h); ip != nil {
			serving.IPs = append(serving.IPs, ip)
		} else if h != "" {
			serving.DNSNames = append(serving.DNSNames, h)
		}
	}
	if n.Serving, err = NewCertificateManager(serving); err != nil {
		return nil, err
	}
	return n, nil
}

// RESTConfig is the node's client configuration: it presents the current
// client certificate at each handshake, and connections made with a
// certificate rotated out are closed, so that the next request
// authenticates with the new one without a restart. Its transport is its
// own, so it carries no CA: CAPEM is the cluster's.
func (n *Node) RESTConfig() *rest.Config { return rest.CopyConfig(n.config) }

// CAPEM is the cluster CA of the node's kubeconfig.
func (n *Node) CAPEM() []byte { return n.caPEM }

// Run rotates both certificates until ctx ends.
func (n *Node) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { n.Client.Run(ctx) })
	if n.Serving != nil {
		wg.Go(func() { n.Serving.Run(ctx) })
	}
	wg.Wait()
}

// rotatingConfig is base with a transport that presents m's current
// certificate at each handshake and whose connections are closed at each
// rotation, so that the next requests authenticate with the new
// certificate without a restart (the kubelet's updateTransport).
func rotatingConfig(base *rest.Config, m *CertificateManager) (*rest.Config, error) {
	tlsBase, err := rest.TLSConfigFor(base)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: TLS of %s: %w", base.Host, err)
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: tlsBase.RootCAs, ServerName: tlsBase.ServerName,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return m.Current(), nil }}
	conns := connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
	m.OnRotate(conns.CloseAll)
	cfg := rest.CopyConfig(base)
	// A custom transport excludes TLS options in the configuration.
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	cfg.Transport = utilnet.SetTransportDefaults(&http.Transport{
		Proxy: http.ProxyFromEnvironment, TLSHandshakeTimeout: 10 * time.Second, TLSClientConfig: tlsConfig,
		MaxIdleConnsPerHost: 25, DialContext: conns.DialContext,
	})
	return cfg, nil
}
