package pki

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// serialLimit bounds the serial numbers of signed requests: 128 bits, as
// upstream's signer.
var serialLimit = new(big.Int).Lsh(big.NewInt(1), 128)

// CANotAfter is when the CA expires: nothing it signs may outlive it.
func (b *Bundle) CANotAfter() time.Time {
	if b.ca == nil {
		return time.Time{}
	}
	return b.ca.cert.NotAfter
}

// SignRequest signs a certificate for a PKCS#10 request with the CA, as
// upstream's certificate authority (pkg/controller/certificates/authority)
// does: the request's subject, SANs and public key, the given usages, not
// a CA, valid from notBefore to notAfter (no later than the CA). It
// returns the certificate in PEM.
func (b *Bundle) SignRequest(req *x509.CertificateRequest, usage x509.KeyUsage, extUsages []x509.ExtKeyUsage, notBefore, notAfter time.Time) ([]byte, error) {
	if b.ca == nil {
		return nil, errors.New("pki: no CA to sign with")
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("pki: unable to verify certificate request signature: %w", err)
	}
	caNotAfter := b.ca.cert.NotAfter
	if !notAfter.Before(caNotAfter) {
		notAfter = caNotAfter
	}
	if !notBefore.Before(caNotAfter) {
		return nil, fmt.Errorf("pki: the signer has expired: NotAfter=%v", caNotAfter)
	}
	serial, err := rand.Int(rand.Reader, serialLimit)
	if err != nil {
		return nil, fmt.Errorf("pki: serial number for %s: %w", req.Subject.CommonName, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               req.Subject,
		DNSNames:              req.DNSNames,
		IPAddresses:           req.IPAddresses,
		EmailAddresses:        req.EmailAddresses,
		URIs:                  req.URIs,
		PublicKeyAlgorithm:    req.PublicKeyAlgorithm,
		PublicKey:             req.PublicKey,
		KeyUsage:              usage,
		ExtKeyUsage:           extUsages,
		BasicConstraintsValid: true,
		NotBefore:             notBefore.UTC(),
		NotAfter:              notAfter.UTC(),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, b.ca.cert, req.PublicKey, b.ca.key)
	if err != nil {
		return nil, fmt.Errorf("pki: signing certificate for %s: %w", req.Subject.CommonName, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}
