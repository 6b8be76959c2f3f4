package kite

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/kubernetes"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"

	"github.com/kite-project/kite/controllers"
)

// withComponentIdentities gives the controllers upstream's identities
// instead of the admin's: system:kube-controller-manager (a client
// certificate from the cluster CA) for the shared caches and the
// ServiceAccounts' tokens, each controller its own ServiceAccount in
// kube-system (kube-controller-manager's --use-service-account-credentials,
// as kubeadm runs it), and system:kube-scheduler for the scheduler. The
// bootstrap policy grants each what upstream's does, and no more.
func (s *Server) withComponentIdentities(o *controllers.Options) error {
	kcm, err := s.AddUser(user.KubeControllerManager, nil)
	if err != nil {
		return fmt.Errorf("controllers: identity %s: %w", user.KubeControllerManager, err)
	}
	sched, err := s.AddUser(user.KubeScheduler, nil)
	if err != nil {
		return fmt.Errorf("controllers: identity %s: %w", user.KubeScheduler, err)
	}
	o.Config, o.SchedulerConfig, o.UseServiceAccountCredentials = kcm, sched, true
	return nil
}

// NodeConfig returns a client configuration for the agent of node name:
// a client certificate from the cluster CA for system:node:<name> in
// system:nodes, the identity the Node authorizer and NodeRestriction
// judge, as a kubelet's after its TLS bootstrap. kite server's own agent
// runs with it.
func (s *Server) NodeConfig(name string) (*rest.Config, error) {
	return s.AddUser("system:node:"+name, []string{user.NodesGroup})
}

// kubeletCAs are the CAs agents' serving certificates are verified with
// when the API server dials them: --kubelet-certificate-authority's,
// required of every agent, else the cluster CA's, which issues the
// certificates of kite server's own agent and of joined agents'
// kubelet-serving requests, verified when an agent presents one.
func (s *Server) kubeletCAs(o AuthenticationOptions) (*x509.CertPool, bool, error) {
	caPEM, required := s.bundle.CAPEM, false
	if o.KubeletCertificateAuthority != "" {
		b, err := os.ReadFile(o.KubeletCertificateAuthority)
		if err != nil {
			return nil, false, fmt.Errorf("--kubelet-certificate-authority: %w", err)
		}
		caPEM, required = b, true
	}
	pool, err := certutil.NewPoolFromBytes(caPEM)
	if err != nil {
		return nil, false, fmt.Errorf("kubelet certificate authority: %w", err)
	}
	return pool, required, nil
}

// loopbackConfig is the identity of what runs inside kube-apiserver
// upstream and talks to it over its loopback client (the CRD controllers):
// system:apiserver in system:masters, from a client certificate rather
// than the admin token.
func (s *Server) loopbackConfig() (*rest.Config, error) {
	c, err := s.AddUser(user.APIServerUser, []string{user.SystemPrivilegedGroup})
	if err != nil {
		return nil, fmt.Errorf("identity %s: %w", user.APIServerUser, err)
	}
	return c, nil
}

// The cluster DNS's identity: CoreDNS's as kubeadm installs it.
const (
	coreDNSServiceAccount = "coredns"
	coreDNSRole           = "system:coredns"
)

// clusterDNSConfig is the cluster DNS's identity, CoreDNS's under kubeadm:
// the ServiceAccount kube-system/coredns bound to the ClusterRole
// system:coredns (list and watch of endpoints, services, pods,
// namespaces and endpointslices), made here where missing as kubeadm's
// addon does. Its credential is a client certificate for the
// ServiceAccount's user name and groups, which RBAC matches as the
// ServiceAccount, instead of a token to refresh.
func (s *Server) clusterDNSConfig(ctx context.Context, admin kubernetes.Interface) (*rest.Config, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: coreDNSServiceAccount, Namespace: metav1.NamespaceSystem}}
	if _, err := admin.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("cluster DNS: serviceaccount %s/%s: %w", sa.Namespace, sa.Name, err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: coreDNSRole}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
	}}
	// What was created here must be what the authorizer decides by before
	// the DNS's first lists, or they are forbidden and back off.
	written := map[string]uint64{}
	if created, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err == nil {
		written["clusterroles"], _ = strconv.ParseUint(created.ResourceVersion, 10, 64)
	} else if !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("cluster DNS: clusterrole %s: %w", role.Name, err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: coreDNSRole},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: coreDNSRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}}}
	if created, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err == nil {
		written["clusterrolebindings"], _ = strconv.ParseUint(created.ResourceVersion, 10, 64)
	} else if !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("cluster DNS: clusterrolebinding %s: %w", binding.Name, err)
	}
	if s.authz != nil {
		if err := s.authz.WaitFor(ctx, written); err != nil {
			return nil, fmt.Errorf("cluster DNS: its role and binding: %w", err)
		}
	}
	name := serviceaccount.MakeUsername(sa.Namespace, sa.Name)
	c, err := s.AddUser(name, serviceaccount.MakeGroupNames(sa.Namespace))
	if err != nil {
		return nil, fmt.Errorf("cluster DNS: identity %s: %w", name, err)
	}
	return c, nil
}

// startCRDController runs the CRD controllers with the loopback identity.
func (s *Server) startCRDController() error {
	c, err := s.loopbackConfig()
	if err != nil {
		return err
	}
	return s.crds.StartController(s.runCtx, c)
}
