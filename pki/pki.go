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
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// File names inside the directory given to Ensure.
const (
	CACertFile      = "ca.crt"
	CAKeyFile       = "ca.key"
	ServingCertFile = "serving.crt"
	ServingKeyFile  = "serving.key"
)

// Default lifetimes. The serving certificate lives a year, like the ones
// kubeadm issues, and is reissued in its last month.
const (
	DefaultServingValidity = 365 * 24 * time.Hour
	DefaultRenewBefore     = 30 * 24 * time.Hour
)

// defaultHosts are always in the serving certificate, so that the loopback
// URL the kubeconfig names is valid whatever else is configured.
var defaultHosts = []string{"127.0.0.1", "::1", "localhost"}

// Options says what the serving certificate must cover.
type Options struct {
	// Hosts are extra IP addresses or DNS names for the serving
	// certificate, besides 127.0.0.1, ::1 and localhost.
	Hosts []string
	// ServingValidity is the serving certificate's lifetime;
	// DefaultServingValidity when zero.
	ServingValidity time.Duration
	// RenewBefore reissues the serving certificate when less than this is
	// left of its lifetime; DefaultRenewBefore when zero.
	RenewBefore time.Duration
	// Now is the clock; time.Now when nil. Tests use it to age certificates.
	Now func() time.Time
}

// Bundle is what Ensure found or made.
type Bundle struct {
	// TLSConfig serves the API with the serving certificate (TLS 1.2+,
	// HTTP/2 and HTTP/1.1).
	TLSConfig *tls.Config
	// CAPEM is the CA certificate in PEM, for kubeconfigs and clients.
	CAPEM []byte
	// CACertPath and ServingCertPath are the files on disk.
	CACertPath, ServingCertPath string
	// Hosts are the serving certificate's SANs, sorted.
	Hosts []string
	// NotAfter is the serving certificate's expiry.
	NotAfter time.Time

	ca  *keyPair
	now func() time.Time
}

// ClientTLSConfig returns a client configuration that trusts only the CA.
func (b *Bundle) ClientTLSConfig() (*tls.Config, error) {
	pool, err := certutil.NewPoolFromBytes(b.CAPEM)
	if err != nil {
		return nil, fmt.Errorf("pki: CA pool from %s: %w", b.CACertPath, err)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// Ensure makes sure dir holds a CA and a serving certificate for the
// wanted hosts, creating dir (0700) and the files as needed. Private keys
// are written 0600, certificates 0644, each atomically.
func Ensure(dir string, opts Options) (*Bundle, error) {
	opts = opts.withDefaults()
	if err := CheckHosts(opts.Hosts); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki: creating %s: %w", dir, err)
	}
	hosts := wantedHosts(opts.Hosts)
	ca, err := ensureCA(dir)
	if err != nil {
		return nil, err
	}
	serving, servingPEM, keyPEM, err := ensureServing(dir, ca, hosts, opts)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(servingPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("pki: loading serving key pair from %s: %w", dir, err)
	}
	return &Bundle{
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{pair},
			MinVersion:   tls.VersionTLS12,
			NextProtos:   []string{"h2", "http/1.1"},
		},
		CAPEM:           ca.certPEM,
		CACertPath:      filepath.Join(dir, CACertFile),
		ServingCertPath: filepath.Join(dir, ServingCertFile),
		Hosts:           hosts,
		NotAfter:        serving.NotAfter,
		ca:              ca,
		now:             opts.Now,
	}, nil
}

func (o Options) withDefaults() Options {
	if o.ServingValidity <= 0 {
		o.ServingValidity = DefaultServingValidity
	}
	if o.RenewBefore <= 0 {
		o.RenewBefore = DefaultRenewBefore
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// CheckHosts refuses a host that cannot be a SAN: one that is neither an IP
// address nor a DNS name (a leading "*." wildcard allowed, as k3s allows in
// --tls-san). Ensure calls it before it writes anything; a command calls
// it on its flags before it starts anything.
func CheckHosts(hosts []string) error {
	for _, h := range hosts {
		if net.ParseIP(h) != nil {
			continue
		}
		if errs := validation.IsWildcardDNS1123Subdomain(h); strings.HasPrefix(h, "*.") && len(errs) == 0 {
			continue
		}
		if errs := validation.IsDNS1123Subdomain(h); len(errs) > 0 {
			return fmt.Errorf("pki: serving certificate host %q is neither an IP address nor a DNS name: %s", h, strings.Join(errs, "; "))
		}
	}
	return nil
}

// wantedHosts is the default hosts plus the configured ones, normalised
// (IPs in canonical form), deduplicated and sorted so that two runs with
// the same configuration compare equal.
func wantedHosts(extra []string) []string {
	var out []string
	for _, h := range append(slices.Clone(defaultHosts), extra...) {
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			h = ip.String()
		}
		out = append(out, h)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// keyPair is a parsed certificate with its key: the CA's, or the serving
// certificate's when checking whether it can be reused.
type keyPair struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
}

// ensureCA loads the CA, or creates one when either file is missing or
// they do not belong together.
func ensureCA(dir string) (*keyPair, error) {
	return ensureCAFiles(filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile), "kite-ca")
}

// ensureCAFiles is ensureCA for any pair of files and common name.
func ensureCAFiles(certPath, keyPath, commonName string) (*keyPair, error) {
	ca, err := loadPair(certPath, keyPath)
	if err == nil && ca.cert.IsCA {
		return ca, nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: generating CA key: %w", err)
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: commonName}, key)
	if err != nil {
		return nil, fmt.Errorf("pki: self-signing CA: %w", err)
	}
	certPEM, keyPEM, err := encode(cert, key)
	if err != nil {
		return nil, err
	}
	// The key first: a certificate without its key would be reused on
	// the next start and fail there.
	if err := writeAtomic(keyPath, keyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := writeAtomic(certPath, certPEM, 0o644); err != nil {
		return nil, err
	}
	return &keyPair{cert: cert, key: key, certPEM: certPEM}, nil
}

// ensureServing returns the serving certificate and key in PEM, reissuing
// them when they are missing, for other hosts, near expiry or not from ca.
func ensureServing(dir string, ca *keyPair, hosts []string, opts Options) (*x509.Certificate, []byte, []byte, error) {
	certPath, keyPath := filepath.Join(dir, ServingCertFile), filepath.Join(dir, ServingKeyFile)
	cur, err := loadPair(certPath, keyPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil, err
	}
	if err == nil && servingStillGood(cur.cert, ca, hosts, opts) {
		keyPEM, err := os.ReadFile(keyPath)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("pki: reading %s: %w", keyPath, err)
		}
		return cur.cert, cur.certPEM, keyPEM, nil
	}
	cert, key, err := issueServing(ca, hosts, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	certPEM, keyPEM, err := encode(cert, key)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := writeAtomic(keyPath, keyPEM, 0o600); err != nil {
		return nil, nil, nil, err
	}
	if err := writeAtomic(certPath, certPEM, 0o644); err != nil {
		return nil, nil, nil, err
	}
	return cert, certPEM, keyPEM, nil
}

func servingStillGood(cert *x509.Certificate, ca *keyPair, hosts []string, opts Options) bool {
	if cert.CheckSignatureFrom(ca.cert) != nil {
		return false
	}
	if !slices.Equal(certHosts(cert), hosts) {
		return false
	}
	return opts.Now().Add(opts.RenewBefore).Before(cert.NotAfter)
}

// certHosts lists a certificate's SANs the way wantedHosts does.
func certHosts(cert *x509.Certificate) []string {
	out := slices.Clone(cert.DNSNames)
	for _, ip := range cert.IPAddresses {
		out = append(out, ip.String())
	}
	slices.Sort(out)
	return out
}

func issueServing(ca *keyPair, hosts []string, opts Options) (*x509.Certificate, crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: generating serving key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, fmt.Errorf("pki: serial number: %w", err)
	}
	now := opts.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial.Add(serial, big.NewInt(1)),
		Subject:      pkix.Name{CommonName: "kite-apiserver"},
		// Backdated a little so a client whose clock is slightly behind
		// accepts a certificate issued a moment ago.
		NotBefore:   now.Add(-time.Hour).UTC(),
		NotAfter:    now.Add(opts.ServingValidity).UTC(),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: signing serving certificate for %v: %w", hosts, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: parsing new serving certificate: %w", err)
	}
	return cert, key, nil
}

// loadPair reads a certificate and its key. It returns an error wrapping
// os.ErrNotExist when either file is missing or the two do not match, so
// that the caller regenerates them.
func loadPair(certPath, keyPath string) (*keyPair, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, missingOr(err, certPath)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, missingOr(err, keyPath)
	}
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("pki: %s unreadable, will regenerate: %w", certPath, os.ErrNotExist)
	}
	parsed, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("pki: %s unreadable, will regenerate: %w", keyPath, os.ErrNotExist)
	}
	key, ok := parsed.(crypto.Signer)
	if !ok || !publicKeysEqual(key.Public(), certs[0].PublicKey) {
		return nil, fmt.Errorf("pki: %s does not match %s, will regenerate: %w", keyPath, certPath, os.ErrNotExist)
	}
	return &keyPair{cert: certs[0], key: key, certPEM: certPEM}, nil
}

func missingOr(err error, path string) error {
	if errors.Is(err, os.ErrNotExist) {
		return err
	}
	return fmt.Errorf("pki: reading %s: %w", path, err)
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	ka, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ka.Equal(b)
}

func encode(cert *x509.Certificate, key crypto.Signer) (certPEM, keyPEM []byte, err error) {
	certPEM, err = certutil.EncodeCertificates(cert)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: encoding certificate %q: %w", cert.Subject.CommonName, err)
	}
	keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: encoding key for %q: %w", cert.Subject.CommonName, err)
	}
	return certPEM, keyPEM, nil
}

// writeAtomic writes data to a temporary file in the same directory and
// renames it into place, so a crash never leaves a half-written key.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("pki: writing %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return fmt.Errorf("pki: chmod %s: %w", tmp, err)
	}
	// Synced before the rename, so the rename never publishes an empty file.
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("pki: writing %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("pki: syncing %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("pki: closing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("pki: renaming %s to %s: %w", tmp, path, err)
	}
	return nil
}

// LoadCA reads the CA that Ensure keeps in dir, without creating or
// reissuing anything: for a tool that issues certificates from it ("kite
// kubeconfig --user") beside a running server.
func LoadCA(dir string) (*Bundle, error) {
	return LoadCAFiles(filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile))
}

// LoadCAFiles reads a CA certificate and its key from two files, as
// kube-controller-manager's --cluster-signing-cert-file and
// --cluster-signing-key-file name them.
func LoadCAFiles(certPath, keyPath string) (*Bundle, error) {
	ca, err := loadPair(certPath, keyPath)
	if err != nil {
		return nil, fmt.Errorf("pki: loading the CA from %s and %s: %w", certPath, keyPath, err)
	}
	if !ca.cert.IsCA {
		return nil, fmt.Errorf("pki: %s is not a CA certificate", certPath)
	}
	return &Bundle{CAPEM: ca.certPEM, CACertPath: certPath, ca: ca, now: time.Now}, nil
}
