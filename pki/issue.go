package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// KubeletClientCommonName is the common name of the API server's client
// certificate for agents, as kube-apiserver's kubelet client certificate:
// the API server issues it, an agent's server lets only it in. Here, below
// both, so that neither imports the other for it.
const KubeletClientCommonName = "kube-apiserver-kubelet-client"

// IssueOptions say what an in-memory certificate from the CA is for.
type IssueOptions struct {
	CommonName string
	// Client makes a client certificate; else a serving one for Hosts.
	Client bool
	Hosts  []string
	// Validity is its lifetime; DefaultServingValidity when zero.
	Validity time.Duration
}

// Issue signs a new key pair with the CA, kept in memory only: the API
// server's client certificate for agents, and the serving certificate of
// the agent that runs in the same process. Peers check them against the
// CA, which outlives any one of them.
func (b *Bundle) Issue(o IssueOptions) (tls.Certificate, error) { return b.issue(o, nil) }

func (b *Bundle) issue(o IssueOptions, organizations []string) (tls.Certificate, error) {
	if b.ca == nil {
		return tls.Certificate{}, errors.New("pki: no CA to issue from")
	}
	if o.Validity == 0 {
		o.Validity = DefaultServingValidity
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("pki: generating key for %s: %w", o.CommonName, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("pki: serial number: %w", err)
	}
	now := b.now()
	tmpl := &x509.Certificate{
		SerialNumber: serial.Add(serial, big.NewInt(1)),
		Subject:      pkix.Name{CommonName: o.CommonName, Organization: organizations},
		NotBefore:    now.Add(-time.Hour).UTC(), // as the serving certificate
		NotAfter:     now.Add(o.Validity).UTC(),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if o.Client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	for _, h := range o.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, b.ca.cert, key.Public(), b.ca.key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("pki: signing certificate for %s: %w", o.CommonName, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("pki: parsing certificate for %s: %w", o.CommonName, err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// IssueUser signs a client certificate for a user: CommonName the user,
// Organization its groups, as kube-apiserver's client certificate
// authentication reads them (and envtest's AddUser writes them).
func (b *Bundle) IssueUser(name string, groups []string, validity time.Duration) (tls.Certificate, error) {
	if name == "" {
		return tls.Certificate{}, errors.New("pki: a user certificate needs a user name")
	}
	return b.issue(IssueOptions{CommonName: name, Client: true, Validity: validity}, groups)
}

// PEM encodes a certificate from Issue or IssueUser and its key, for a
// kubeconfig's client-certificate-data and client-key-data.
func PEM(c tls.Certificate) (certPEM, keyPEM []byte, err error) {
	key, ok := c.PrivateKey.(crypto.Signer)
	if !ok || c.Leaf == nil {
		return nil, nil, errors.New("pki: certificate without a parsed leaf or a signing key")
	}
	return encode(c.Leaf, key)
}
