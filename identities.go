package kite

import (
	"crypto/x509"
	"fmt"
	"os"

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
