// Package bootstrap is both sides of joining a node with a bootstrap
// token, as kubeadm and the kubelet do them: CreateToken (kite token
// create, on the control plane) makes the token, the bindings that let
// its holders ask for node client certificates that are approved at once,
// and the cluster-info ConfigMap a joining node fetches the CA from;
// Join (kite agent --server --token, on the node) verifies the CA by its
// hash, asks for a client certificate for system:node:<name> with a
// CertificateSigningRequest (the kubelet's TLS bootstrap,
// pkg/kubelet/certificate/bootstrap), waits for it and writes the
// node's own kubeconfig.
package bootstrap

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
)

// NodeTokenGroup is the extra group of the tokens CreateToken makes
// (kubeadm's system:bootstrappers:kubeadm:default-node-token): what the
// bindings below name.
const NodeTokenGroup = "system:bootstrappers:kite:default-node-token"

// DefaultTTL is how long a token lives unless told, as kubeadm's.
const DefaultTTL = 24 * time.Hour

// The names of what CreateToken keeps, kubeadm's with "kite:" for
// "kubeadm:".
const (
	ClusterInfoRole        = "kite:bootstrap-signer-clusterinfo"
	nodeBootstrapBinding   = "kite:kubelet-bootstrap"
	nodeAutoApproveBinding = "kite:node-autoapprove-bootstrap"
	nodeAutoApproveRenewal = "kite:node-autoapprove-certificate-rotation"
	// nodeProxierBinding lets nodes run the service proxy: Kite's agent
	// runs it as the node, where kubeadm binds system:node-proxier to
	// kube-proxy's own ServiceAccount (and k3s gives kube-proxy a
	// certificate of its own).
	nodeProxierBinding         = "kite:node-proxier"
	clusterInfoKubeconfigField = bootstrapapi.KubeConfigKey
)

// TokenOptions say what token to make.
type TokenOptions struct {
	// Server is the API server's URL a node joins (cluster-info's).
	Server string
	// CAPEM is the cluster CA, published in cluster-info.
	CAPEM []byte
	// TTL is the token's lifetime; 0 means DefaultTTL, negative never
	// expires.
	TTL time.Duration
	// Description is the Secret's description.
	Description string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// CreateToken makes a bootstrap token ("<id>.<secret>", a
// bootstrap.kubernetes.io/token Secret in kube-system for authentication,
// in NodeTokenGroup) and makes sure of what kubeadm's init makes for
// joining nodes: NodeTokenGroup bound to system:node-bootstrapper and to
// the auto-approval of node client certificates, system:nodes to the
// auto-approval of their renewal, and the cluster-info ConfigMap in
// kube-public (the server and CA, readable by system:anonymous). Existing
// bindings and roles are left as they are.
func CreateToken(ctx context.Context, client kubernetes.Interface, o TokenOptions) (string, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	if err := ensureJoinPolicy(ctx, client, o); err != nil {
		return "", err
	}
	token, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		return "", fmt.Errorf("bootstrap token: %w", err)
	}
	id, secret, _ := strings.Cut(token, ".")
	data := map[string]string{
		bootstrapapi.BootstrapTokenIDKey:               id,
		bootstrapapi.BootstrapTokenSecretKey:           secret,
		bootstrapapi.BootstrapTokenUsageAuthentication: "true",
		bootstrapapi.BootstrapTokenUsageSigningKey:     "true",
		bootstrapapi.BootstrapTokenExtraGroupsKey:      NodeTokenGroup,
	}
	if o.Description != "" {
		data[bootstrapapi.BootstrapTokenDescriptionKey] = o.Description
	}
	if o.TTL > 0 {
		data[bootstrapapi.BootstrapTokenExpirationKey] = o.Now().Add(o.TTL).UTC().Format(time.RFC3339)
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstrapapi.BootstrapTokenSecretPrefix + id, Namespace: metav1.NamespaceSystem},
		Type:       corev1.SecretType(bootstrapapi.SecretTypeBootstrapToken),
		StringData: data,
	}
	if _, err := client.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("bootstrap token secret %s: %w", s.Name, err)
	}
	return token, nil
}

// nodeProxier binds system:node-proxier to the nodes: Kite's agent runs
// the service proxy as its node.
func nodeProxier() *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: nodeProxierBinding},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:nodes"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node-proxier"}}
}

// EnsureNodeProxier creates the binding that lets agents, which run as
// their nodes, run the service proxy, where missing: for kite server's
// own agent (CreateToken makes it for joining ones).
func EnsureNodeProxier(ctx context.Context, client kubernetes.Interface) error {
	b := nodeProxier()
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("clusterrolebinding %s: %w", b.Name, err)
	}
	return nil
}

// ensureJoinPolicy creates the bindings, the cluster-info ConfigMap and
// the Role that publishes it, where missing.
func ensureJoinPolicy(ctx context.Context, client kubernetes.Interface, o TokenOptions) error {
	group := func(name string) []rbacv1.Subject {
		return []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}}
	}
	for _, b := range []*rbacv1.ClusterRoleBinding{
		{ObjectMeta: metav1.ObjectMeta{Name: nodeBootstrapBinding}, Subjects: group(NodeTokenGroup),
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node-bootstrapper"}},
		{ObjectMeta: metav1.ObjectMeta{Name: nodeAutoApproveBinding}, Subjects: group(NodeTokenGroup),
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:certificates.k8s.io:certificatesigningrequests:nodeclient"}},
		{ObjectMeta: metav1.ObjectMeta{Name: nodeAutoApproveRenewal}, Subjects: group("system:nodes"),
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"}},
		nodeProxier(),
	} {
		if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("clusterrolebinding %s: %w", b.Name, err)
		}
	}
	// cluster-info holds the server and the CA, no credential, under
	// the cluster name "", as kubeadm's.
	info := clientcmdapi.NewConfig()
	cluster := clientcmdapi.NewCluster()
	cluster.Server, cluster.CertificateAuthorityData = o.Server, o.CAPEM
	info.Clusters[""] = cluster
	data, err := clientcmd.Write(*info)
	if err != nil {
		return fmt.Errorf("cluster-info kubeconfig: %w", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: bootstrapapi.ConfigMapClusterInfo, Namespace: metav1.NamespacePublic},
		Data: map[string]string{clusterInfoKubeconfigField: string(data)}}
	cms := client.CoreV1().ConfigMaps(metav1.NamespacePublic)
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("configmap %s/%s: %w", cm.Namespace, cm.Name, err)
		}
	} else if err != nil {
		return fmt.Errorf("configmap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: ClusterInfoRole, Namespace: metav1.NamespacePublic},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{bootstrapapi.ConfigMapClusterInfo}}}}
	if _, err := client.RbacV1().Roles(metav1.NamespacePublic).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("role %s: %w", role.Name, err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ClusterInfoRole, Namespace: metav1.NamespacePublic},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "system:anonymous"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: ClusterInfoRole}}
	if _, err := client.RbacV1().RoleBindings(metav1.NamespacePublic).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("rolebinding %s: %w", rb.Name, err)
	}
	return nil
}

// CAHash is kubeadm's public key pin of a CA certificate:
// "sha256:<hex of the SHA-256 of its SubjectPublicKeyInfo>".
func CAHash(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// CAHashOfPEM is CAHash of the first certificate of a PEM bundle.
func CAHashOfPEM(caPEM []byte) (string, error) {
	cert, err := firstCertificate(caPEM)
	if err != nil {
		return "", err
	}
	return CAHash(cert), nil
}

func firstCertificate(caPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(caPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate in the CA data")
	}
	return x509.ParseCertificate(block.Bytes)
}
