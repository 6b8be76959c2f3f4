package pki

import (
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// ClientCertFile and ClientKeyFile are the client certificate that
// EnsureClient keeps beside the CA, for a client in another process (the
// API server of a standalone etcd).
const (
	ClientCertFile = "client.crt"
	ClientKeyFile  = "client.key"
)

// EnsureClient makes sure the Bundle's directory holds a client
// certificate from its CA for commonName (ClientCertFile, ClientKeyFile),
// and returns their paths. As Ensure does for the serving certificate, it
// keeps the one there while it chains to the CA, names commonName, is for
// client authentication and is not within DefaultRenewBefore of expiry,
// and otherwise issues a new one, written atomically (the key 0600).
func (b *Bundle) EnsureClient(commonName string) (certPath, keyPath string, err error) {
	if b.ca == nil {
		return "", "", errors.New("pki: no CA to issue from")
	}
	dir := filepath.Dir(b.CACertPath)
	certPath, keyPath = filepath.Join(dir, ClientCertFile), filepath.Join(dir, ClientKeyFile)
	cur, err := loadPair(certPath, keyPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", "", err
	}
	if err == nil && b.clientStillGood(cur.cert, commonName) {
		return certPath, keyPath, nil
	}
	pair, err := b.Issue(IssueOptions{CommonName: commonName, Client: true})
	if err != nil {
		return "", "", err
	}
	key, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return "", "", fmt.Errorf("pki: key of %s is not a signer", commonName)
	}
	certPEM, keyPEM, err := encode(pair.Leaf, key)
	if err != nil {
		return "", "", err
	}
	// The key first, as for the CA: a certificate without its key would
	// be kept on the next start and fail there.
	if err := writeAtomic(keyPath, keyPEM, 0o600); err != nil {
		return "", "", err
	}
	if err := writeAtomic(certPath, certPEM, 0o644); err != nil {
		return "", "", err
	}
	return certPath, keyPath, nil
}

func (b *Bundle) clientStillGood(cert *x509.Certificate, commonName string) bool {
	return cert.CheckSignatureFrom(b.ca.cert) == nil &&
		cert.Subject.CommonName == commonName &&
		slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageClientAuth) &&
		b.now().Add(DefaultRenewBefore).Before(cert.NotAfter)
}
