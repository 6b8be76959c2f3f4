package bootstrap

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/kubeconfig"
)

// KubeconfigFile is the node's own kubeconfig under the agent's root
// directory, written by Join (the kubelet's kubelet.conf).
const KubeconfigFile = "kubeconfig"

// renewBefore: a certificate with less than this left is asked for
// again at start (the kubelet rotates at 70-90 % of the lifetime; Kite
// renews at start only).
const renewBefore = 24 * time.Hour

// JoinOptions say how a node joins.
type JoinOptions struct {
	// Server is the API server's URL. Required.
	Server string
	// Token is the bootstrap token "<id>.<secret>". Required unless Dir
	// holds a kubeconfig whose certificate is still good.
	Token string
	// CACertHashes are pins of the CA ("sha256:<hex>", CAHash); the CA is
	// then fetched from the cluster-info ConfigMap and must match one.
	CACertHashes []string
	// CACertFile is the CA in PEM; with CACertHashes it must match one.
	// One of the two is required: the token alone does not prove who the
	// server is (Kite does not sign cluster-info with the tokens, as
	// kubeadm's bootstrap signer does).
	CACertFile string
	// NodeName is the node's name. Required.
	NodeName string
	// Dir is where the kubeconfig is written (the agent's root directory).
	Dir string
}

// Join returns the path of the node's own kubeconfig: the one in Dir if
// its client certificate is for the node and good for another day, else
// a new one, from a client certificate asked for with the token (a
// CertificateSigningRequest for CN system:node:<name>, O system:nodes,
// signer kubernetes.io/kube-apiserver-client-kubelet) once the API server
// has proven to hold the CA. It waits until the request is signed (the
// approver approves node client requests of bootstrap tokens at once)
// and fails if it is denied or fails.
func Join(ctx context.Context, o JoinOptions) (string, error) {
	if o.Server == "" || o.NodeName == "" {
		return "", errors.New("bootstrap: the server URL and the node name are required")
	}
	path := filepath.Join(o.Dir, KubeconfigFile)
	user := "system:node:" + o.NodeName
	if stillGood(path, user, time.Now()) {
		return path, nil
	}
	if o.Token == "" {
		return "", fmt.Errorf("bootstrap: %s has no certificate good for another day: a bootstrap token (--token) is required", path)
	}
	caPEM, err := trustedCA(ctx, o)
	if err != nil {
		return "", err
	}
	client, err := kubernetes.NewForConfig(&rest.Config{Host: o.Server, BearerToken: o.Token, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}, UserAgent: "kite-agent/bootstrap"})
	if err != nil {
		return "", fmt.Errorf("bootstrap: client of %s: %w", o.Server, err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", fmt.Errorf("bootstrap: key: %w", err)
	}
	certPEM, err := requestCertificate(ctx, client, key, user)
	if err != nil {
		return "", err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return "", fmt.Errorf("bootstrap: key: %w", err)
	}
	err = kubeconfig.Write(path, kubeconfig.Options{Server: o.Server, CAData: caPEM, ClientCertData: certPEM, ClientKeyData: keyPEM, User: user})
	if err != nil {
		return "", err
	}
	klog.FromContext(ctx).Info("Joined with a bootstrap token", "user", user, "kubeconfig", path)
	return path, nil
}

// stillGood says the kubeconfig at path has a client certificate for user
// valid for at least renewBefore more.
func stillGood(path, user string, now time.Time) bool {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return false
	}
	for _, a := range cfg.AuthInfos {
		certs, err := certutil.ParseCertsPEM(a.ClientCertificateData)
		if err == nil && len(certs) > 0 && certs[0].Subject.CommonName == user && now.Add(renewBefore).Before(certs[0].NotAfter) {
			return true
		}
	}
	return false
}

// trustedCA is the CA the server must prove to hold: the file's, or
// cluster-info's, checked against the pins. cluster-info is read without
// verifying the server (that is what the pin is for) and without sending
// the token to a server not yet trusted.
func trustedCA(ctx context.Context, o JoinOptions) ([]byte, error) {
	var caPEM []byte
	switch {
	case o.CACertFile != "":
		b, err := os.ReadFile(o.CACertFile)
		if err != nil {
			return nil, fmt.Errorf("bootstrap: --ca-cert: %w", err)
		}
		caPEM = b
	case len(o.CACertHashes) > 0:
		b, err := clusterInfoCA(ctx, o.Server)
		if err != nil {
			return nil, err
		}
		caPEM = b
	default:
		return nil, errors.New("bootstrap: --ca-cert-hash or --ca-cert is required: Kite does not sign cluster-info with the tokens, so the token alone cannot prove the server")
	}
	if len(o.CACertHashes) > 0 {
		hash, err := CAHashOfPEM(caPEM)
		if err != nil {
			return nil, fmt.Errorf("bootstrap: the CA: %w", err)
		}
		if !slices.Contains(o.CACertHashes, hash) {
			return nil, fmt.Errorf("bootstrap: the cluster CA's hash %s is none of --ca-cert-hash %v", hash, o.CACertHashes)
		}
	}
	return caPEM, nil
}

// clusterInfoCA reads the CA of the cluster-info ConfigMap in
// kube-public, anonymously, trusting any server certificate.
func clusterInfoCA(ctx context.Context, server string) ([]byte, error) {
	insecure := &rest.Config{Host: server, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, UserAgent: "kite-agent/bootstrap"}
	client, err := kubernetes.NewForConfig(insecure)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: client of %s: %w", server, err)
	}
	cm, err := client.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("bootstrap: reading %s/%s from %s: %w", metav1.NamespacePublic, bootstrapapi.ConfigMapClusterInfo, server, err)
	}
	cfg, err := clientcmd.Load([]byte(cm.Data[bootstrapapi.KubeConfigKey]))
	if err != nil {
		return nil, fmt.Errorf("bootstrap: the kubeconfig of cluster-info: %w", err)
	}
	for _, c := range cfg.Clusters {
		if len(c.CertificateAuthorityData) > 0 {
			return c.CertificateAuthorityData, nil
		}
	}
	return nil, errors.New("bootstrap: cluster-info names no certificate authority")
}

// requestCertificate is the kubelet's TLS bootstrap request: it creates
// the CertificateSigningRequest and waits for its certificate.
func requestCertificate(ctx context.Context, client kubernetes.Interface, key *ecdsa.PrivateKey, user string) ([]byte, error) {
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: user, Organization: []string{"system:nodes"}}}, key)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: certificate request: %w", err)
	}
	csrs := client.CertificatesV1().CertificateSigningRequests()
	created, err := csrs.Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "node-csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
			// An ECDSA key needs no key encipherment (the kubelet's
			// usages for non-RSA keys).
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("bootstrap: creating the certificate signing request: %w", err)
	}
	klog.FromContext(ctx).Info("Waiting for the client certificate", "csr", created.Name)
	return waitForCertificate(ctx, client, created)
}

// waitForCertificate watches the request until it has a certificate, is
// denied or failed, or ctx ends; a watch that ends is started again.
func waitForCertificate(ctx context.Context, client kubernetes.Interface, csr *certificatesv1.CertificateSigningRequest) ([]byte, error) {
	csrs := client.CertificatesV1().CertificateSigningRequests()
	sel := fields.OneTermEqualSelector("metadata.name", csr.Name).String()
	for {
		if cert, done, err := issued(csr); done {
			return cert, err
		}
		w, err := csrs.Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: csr.ResourceVersion})
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("bootstrap: waiting for csr %s: %w", csr.Name, ctx.Err())
			}
			// Read afresh and watch again, after a pause so that a
			// server that is away is not hammered.
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("bootstrap: waiting for csr %s: %w", csr.Name, ctx.Err())
			case <-time.After(time.Second):
			}
			if got, err := csrs.Get(ctx, csr.Name, metav1.GetOptions{}); err == nil {
				csr = got
			}
			continue
		}
		for ev := range w.ResultChan() {
			if got, ok := ev.Object.(*certificatesv1.CertificateSigningRequest); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				csr = got
				if _, done, _ := issued(csr); done {
					break
				}
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("bootstrap: waiting for csr %s: %w", csr.Name, ctx.Err())
		}
	}
}

// issued says whether the request is settled: its certificate, or an
// error when it was denied or failed.
func issued(csr *certificatesv1.CertificateSigningRequest) ([]byte, bool, error) {
	for _, c := range csr.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case certificatesv1.CertificateDenied:
			return nil, true, fmt.Errorf("bootstrap: certificate signing request %s is denied, reason: %s, message: %s", csr.Name, c.Reason, c.Message)
		case certificatesv1.CertificateFailed:
			return nil, true, fmt.Errorf("bootstrap: certificate signing request %s failed, reason: %s, message: %s", csr.Name, c.Reason, c.Message)
		}
	}
	if len(csr.Status.Certificate) > 0 {
		return csr.Status.Certificate, true, nil
	}
	return nil, false, nil
}
