package bootstrap

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/klog/v2"
)

// CertificateOptions say which certificate a CertificateManager keeps.
type CertificateOptions struct {
	// Name names the certificate in logs ("client", "serving").
	Name string
	// GenerateName prefixes the requests' names; "csr-" when empty (the
	// kubelet's "node-csr-" for its bootstrap request).
	GenerateName string
	// SignerName, Subject, DNSNames, IPs and Usages make its requests.
	SignerName string
	Subject    pkix.Name
	DNSNames   []string
	IPs        []net.IP
	Usages     []certificatesv1.KeyUsage
	// File keeps the certificate and its key (PEM, 0600), rewritten at
	// each rotation, as the kubelet's pki/kubelet-*-current.pem. Required.
	File string
	// Client makes the requests. For the client certificate it should
	// authenticate with the manager's own certificate (Config), so that
	// the node renews as itself. Required for Run.
	Client kubernetes.Interface
	// RenewAt says when a certificate is asked for again; nil is the
	// kubelet's: at a random point between 70 and 90 % of its life.
	RenewAt func(cert *x509.Certificate) time.Time
}

// CertificateManager keeps a certificate current through
// CertificateSigningRequests, as the kubelet's certificate manager
// (pkg/kubelet/certificate, k8s.io/client-go/util/certificate): it serves
// the current one to TLS (GetCertificate, GetClientCertificate) and, in
// Run, asks for a new one before the current one expires and swaps it in
// without a restart.
type CertificateManager struct {
	o CertificateOptions

	mu        sync.RWMutex
	cert      *tls.Certificate
	onRotate  []func()
	rotations int
}

// NewCertificateManager loads the certificate of o.File if there is one.
func NewCertificateManager(o CertificateOptions) (*CertificateManager, error) {
	if o.File == "" {
		return nil, errors.New("bootstrap: certificate manager: a file is required")
	}
	m := &CertificateManager{o: o}
	b, err := os.ReadFile(o.File)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("bootstrap: %s certificate: %w", o.Name, err)
	default:
		cert, err := tls.X509KeyPair(b, b)
		if err != nil {
			return nil, fmt.Errorf("bootstrap: %s certificate %s: %w", o.Name, o.File, err)
		}
		m.cert = &cert
	}
	return m, nil
}

// Current is the certificate in use, nil before the first is issued.
func (m *CertificateManager) Current() *tls.Certificate {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.cert
}

// Rotations counts the certificates swapped in by Run.
func (m *CertificateManager) Rotations() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.rotations
}

// OnRotate registers f to run after each swap (e.g. to close the
// connections made with the old certificate).
func (m *CertificateManager) OnRotate(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onRotate = append(m.onRotate, f)
}

// GetCertificate is tls.Config's, for a server; an error before the
// first certificate is issued.
func (m *CertificateManager) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := m.Current(); c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("no %s certificate available yet", m.o.Name)
}

// set swaps the certificate in and writes it to the file.
func (m *CertificateManager) set(certPEM []byte, key *ecdsa.PrivateKey) error {
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return fmt.Errorf("bootstrap: %s key: %w", m.o.Name, err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("bootstrap: the issued %s certificate: %w", m.o.Name, err)
	}
	if err := writeAtomically(m.o.File, append(append([]byte{}, certPEM...), keyPEM...)); err != nil {
		return fmt.Errorf("bootstrap: %s certificate: %w", m.o.Name, err)
	}
	m.mu.Lock()
	m.cert = &cert
	m.rotations++
	hooks := append([]func(){}, m.onRotate...)
	m.mu.Unlock()
	for _, f := range hooks {
		f()
	}
	return nil
}

// Run renews the certificate before it expires (at once when there is
// none or it is past its renewal point) until ctx ends; a failed request
// is retried with a backoff of up to 5 minutes.
func (m *CertificateManager) Run(ctx context.Context) {
	log := klog.FromContext(ctx).WithValues("certificate", m.o.Name)
	backoff := time.Second
	for {
		wait := time.Duration(0)
		if c := m.Current(); c != nil {
			wait = time.Until(m.renewAt(c.Leaf))
		}
		if wait > 0 {
			log.V(2).Info("Renewing the certificate later", "at", time.Now().Add(wait))
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		if err := m.Rotate(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			log.Error(err, "Renewing the certificate failed; retrying", "after", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Minute)
			continue
		}
		backoff = time.Second
		log.Info("Rotated the certificate", "expires", m.Current().Leaf.NotAfter)
	}
}

// Rotate asks for a new certificate with a new key and swaps it in once
// issued (which, for a serving certificate, waits for its approval).
func (m *CertificateManager) Rotate(ctx context.Context) error {
	if m.o.Client == nil {
		return fmt.Errorf("bootstrap: %s certificate: no client to ask for it", m.o.Name)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("bootstrap: key: %w", err)
	}
	certPEM, err := requestCertificate(ctx, m.o.Client, key, csrTemplate{
		generateName: m.o.GenerateName, signer: m.o.SignerName, subject: m.o.Subject, dnsNames: m.o.DNSNames, ips: m.o.IPs, usages: m.o.Usages,
	})
	if err != nil {
		return err
	}
	return m.set(certPEM, key)
}

func (m *CertificateManager) renewAt(cert *x509.Certificate) time.Time {
	if m.o.RenewAt != nil {
		return m.o.RenewAt(cert)
	}
	return RenewAt(cert.NotBefore, cert.NotAfter, randomFraction())
}

// RenewAt is the kubelet's rotation deadline: at fraction (0 to 1) of
// the way from 70 to 90 % of the life from notBefore to notAfter.
func RenewAt(notBefore, notAfter time.Time, fraction float64) time.Time {
	life := notAfter.Sub(notBefore)
	return notBefore.Add(time.Duration(float64(life) * (0.7 + 0.2*fraction)))
}

func randomFraction() float64 {
	n, err := rand.Int(rand.Reader, big.NewInt(1<<20))
	if err != nil {
		return 0.5
	}
	return float64(n.Int64()) / (1 << 20)
}

// writeAtomically replaces path with data (0600) through a temporary
// file, so that a reader never sees half a certificate.
func writeAtomically(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// csrTemplate is what a CertificateSigningRequest asks for.
type csrTemplate struct {
	generateName string
	signer       string
	subject      pkix.Name
	dnsNames     []string
	ips          []net.IP
	usages       []certificatesv1.KeyUsage
}

// requestCertificate creates the CertificateSigningRequest and waits for
// its certificate (the kubelet's csr.RequestCertificate).
func requestCertificate(ctx context.Context, client kubernetes.Interface, key *ecdsa.PrivateKey, t csrTemplate) ([]byte, error) {
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: t.subject, DNSNames: t.dnsNames, IPAddresses: t.ips}, key)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: certificate request: %w", err)
	}
	if t.generateName == "" {
		t.generateName = "csr-"
	}
	created, err := client.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: t.generateName},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: t.signer,
			Usages:     t.usages,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("bootstrap: creating the %s certificate signing request: %w", t.signer, err)
	}
	klog.FromContext(ctx).Info("Waiting for the certificate", "csr", created.Name, "signer", t.signer)
	return waitForCertificate(ctx, client, created)
}
