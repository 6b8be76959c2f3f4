package bootstrap

import (
	"context"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/cluster-bootstrap/token/jws"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	"k8s.io/klog/v2"
)

// KubeconfigFile is the node's own kubeconfig under the agent's root
// directory, written by Join (the kubelet's kubelet.conf). It names the
// client certificate by its file, ClientCertificateFile, which the
// agent's certificate manager rewrites at each rotation.
const KubeconfigFile = "kubeconfig"

// ClientCertificateFile and ServingCertificateFile keep the node's
// certificates and keys under the agent's root directory (the kubelet's
// pki/kubelet-client-current.pem and pki/kubelet-server-current.pem).
const (
	ClientCertificateFile  = "pki/node-client-current.pem"
	ServingCertificateFile = "pki/node-serving-current.pem"
)

// renewBefore: a certificate with less than this left is not used at
// start: the token asks for a new one (the manager rotates long before).
const renewBefore = time.Minute

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
	// One of the two is required: the token alone proves only that the
	// server knows the token (the cluster-info signature), not that it
	// holds the cluster's CA.
	CACertFile string
	// DiscoveryTimeout bounds the wait for cluster-info to be signed for
	// the token (the bootstrap signer signs it a moment after the token
	// is made); 0 means 5 minutes, kubeadm's discovery timeout.
	DiscoveryTimeout time.Duration
	// NodeName is the node's name. Required.
	NodeName string
	// Dir is where the kubeconfig is written (the agent's root directory).
	Dir string
}

// Join returns the path of the node's own kubeconfig: the one in Dir if
// its client certificate is for the node and not about to expire (the
// agent rotates it from then on), else a new one, from a client
// certificate asked for with the token (a CertificateSigningRequest for
// CN system:node:<name>, O system:nodes, signer
// kubernetes.io/kube-apiserver-client-kubelet) once the API server has
// proven to hold the CA. It waits until the request is signed (the
// approver approves node client requests of bootstrap tokens at once)
// and fails if it is denied or fails.
func Join(ctx context.Context, o JoinOptions) (string, error) {
	if o.Server == "" || o.NodeName == "" {
		return "", errors.New("bootstrap: the server URL and the node name are required")
	}
	path := filepath.Join(o.Dir, KubeconfigFile)
	certFile := filepath.Join(o.Dir, ClientCertificateFile)
	user := "system:node:" + o.NodeName
	if stillGood(path, certFile, user, time.Now()) {
		return path, nil
	}
	if o.Token == "" {
		return "", fmt.Errorf("bootstrap: %s has no certificate good for another minute: a bootstrap token (--token) is required", path)
	}
	caPEM, err := trustedCA(ctx, o)
	if err != nil {
		return "", err
	}
	client, err := kubernetes.NewForConfig(&rest.Config{Host: o.Server, BearerToken: o.Token, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}, UserAgent: "kite-agent/bootstrap"})
	if err != nil {
		return "", fmt.Errorf("bootstrap: client of %s: %w", o.Server, err)
	}
	co := nodeClientCertificate(o.NodeName, certFile, client)
	co.GenerateName = "node-csr-"
	m, err := NewCertificateManager(co)
	if err != nil {
		return "", err
	}
	if err := m.Rotate(ctx); err != nil {
		return "", err
	}
	if err := writeKubeconfig(path, o.Server, caPEM, user, certFile); err != nil {
		return "", err
	}
	klog.FromContext(ctx).Info("Joined with a bootstrap token", "user", user, "kubeconfig", path)
	return path, nil
}

// nodeClientCertificate is the node's client certificate, as the
// kubelet asks for it: an ECDSA key needs no key encipherment (the
// kubelet's usages for non-RSA keys).
func nodeClientCertificate(nodeName, file string, client kubernetes.Interface) CertificateOptions {
	return CertificateOptions{
		Name: "client", File: file, Client: client, SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
		Subject: pkix.Name{CommonName: "system:node:" + nodeName, Organization: []string{"system:nodes"}},
		Usages:  []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
	}
}

// writeKubeconfig writes the node's kubeconfig (0600), naming the client
// certificate's file rather than holding it, so that a rotation needs no
// new kubeconfig (the kubelet's kubelet.conf).
func writeKubeconfig(path, server string, caPEM []byte, user, certFile string) error {
	cfg := clientcmdapi.NewConfig()
	cluster := clientcmdapi.NewCluster()
	cluster.Server, cluster.CertificateAuthorityData = server, caPEM
	cfg.Clusters["kite"] = cluster
	auth := clientcmdapi.NewAuthInfo()
	auth.ClientCertificate, auth.ClientKey = certFile, certFile
	cfg.AuthInfos[user] = auth
	kctx := clientcmdapi.NewContext()
	kctx.Cluster, kctx.AuthInfo, kctx.Namespace = "kite", user, metav1.NamespaceDefault
	cfg.Contexts["kite"] = kctx
	cfg.CurrentContext = "kite"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("bootstrap: kubeconfig %s: %w", path, err)
	}
	return nil
}

// stillGood says the kubeconfig at path names certFile, which holds a
// client certificate for user valid for at least renewBefore more.
func stillGood(path, certFile, user string, now time.Time) bool {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return false
	}
	named := false
	for _, a := range cfg.AuthInfos {
		named = named || a.ClientCertificate == certFile
	}
	b, err := os.ReadFile(certFile)
	if !named || err != nil {
		return false
	}
	certs, err := certutil.ParseCertsPEM(b)
	return err == nil && len(certs) > 0 && certs[0].Subject.CommonName == user && now.Add(renewBefore).Before(certs[0].NotAfter)
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
		b, err := clusterInfoCA(ctx, o)
		if err != nil {
			return nil, err
		}
		caPEM = b
	default:
		return nil, errors.New("bootstrap: --ca-cert-hash or --ca-cert is required: the token alone cannot prove that the server holds the cluster's CA")
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

// clusterInfoCA is the CA of the cluster-info ConfigMap in kube-public,
// read as kubeadm's token discovery reads it: anonymously, trusting any
// server certificate (the pin checks the CA afterwards) and without
// sending the token to a server not yet trusted, once cluster-info holds
// a signature for the token (waited for up to DiscoveryTimeout), which
// must verify with the token: only a server that knows the token's secret
// can sign, so a forged cluster-info is refused.
func clusterInfoCA(ctx context.Context, o JoinOptions) ([]byte, error) {
	insecure := &rest.Config{Host: o.Server, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, UserAgent: "kite-agent/bootstrap"}
	client, err := kubernetes.NewForConfig(insecure)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: client of %s: %w", o.Server, err)
	}
	cm, err := signedClusterInfo(ctx, client, o)
	if err != nil {
		return nil, err
	}
	content, err := verifyClusterInfo(cm, o.Token)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: %s: %w", o.Server, err)
	}
	cfg, err := clientcmd.Load([]byte(content))
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

// signedClusterInfo reads cluster-info until it has a signature for the
// token, or DiscoveryTimeout passes (kubeadm's getClusterInfo): the
// signature is added a moment after the token is made.
func signedClusterInfo(ctx context.Context, client kubernetes.Interface, o JoinOptions) (*corev1.ConfigMap, error) {
	timeout := o.DiscoveryTimeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	id, _, _ := strings.Cut(o.Token, ".")
	var cm *corev1.ConfigMap
	var last error
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		got, err := client.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
		if err != nil {
			if last == nil { // an unsigned cluster-info says more than the deadline's error
				last = fmt.Errorf("reading %s/%s from %s: %w", metav1.NamespacePublic, bootstrapapi.ConfigMapClusterInfo, o.Server, err)
			}
			return false, nil
		}
		if _, signed := got.Data[bootstrapapi.JWSSignatureKeyPrefix+id]; signed {
			cm = got
			return true, nil
		}
		// What verifyClusterInfo says of an unsigned cluster-info.
		_, last = verifyClusterInfo(got, o.Token)
		last = fmt.Errorf("%s: %w", o.Server, last)
		return false, nil
	})
	if err == nil {
		return cm, nil
	}
	if last == nil {
		last = err
	}
	return nil, fmt.Errorf("bootstrap: %w", last)
}

// verifyClusterInfo returns cluster-info's kubeconfig if its detached
// JWS under jws-kubeconfig-<token id> verifies with the token (kubeadm's
// validateClusterInfoToken, with its messages).
func verifyClusterInfo(cm *corev1.ConfigMap, token string) (string, error) {
	content := cm.Data[bootstrapapi.KubeConfigKey]
	if content == "" {
		return "", fmt.Errorf("there is no %s key in the %s ConfigMap. This API Server isn't set up for token bootstrapping, can't connect", bootstrapapi.KubeConfigKey, bootstrapapi.ConfigMapClusterInfo)
	}
	id, secret, ok := strings.Cut(token, ".")
	if !ok || !bootstraputil.IsValidBootstrapToken(token) {
		return "", fmt.Errorf("the bootstrap token is not of the form [a-z0-9]{6}.[a-z0-9]{16}")
	}
	sig := cm.Data[bootstrapapi.JWSSignatureKeyPrefix+id]
	if sig == "" {
		return "", fmt.Errorf("token id %q is invalid for this cluster or it has expired. Use \"kite token create\" on the control-plane node to create a new valid token", id)
	}
	if !jws.DetachedTokenIsValid(sig, content, id, secret) {
		return "", errors.New("failed to verify JWS signature of received cluster info object, can't trust this API Server")
	}
	return content, nil
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
