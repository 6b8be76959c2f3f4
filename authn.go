package kite

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"

	"github.com/kite-project/kite/apiserver/authn"
	"github.com/kite-project/kite/apiserver/authn/serviceaccount"
	"github.com/kite-project/kite/apiserver/authz"
	"github.com/kite-project/kite/pki"
	"github.com/kite-project/kite/registry/builtin"
)

// authentication is the Server's: who a request is (authn), the
// ServiceAccount tokens it signs and verifies, the OIDC discovery
// handlers, and the CA pool that client certificates must chain to.
type authentication struct {
	// options are the authenticator's but for its Authorizer and the
	// embedder's static tokens (newAuthenticator adds them).
	options       authn.Options
	authenticator *authn.Authenticator
	tokens        *serviceaccount.Tokens
	handlers      map[string]http.Handler
	clientCA      *x509.CertPool
}

// newAuthentication loads (or makes) the ServiceAccount keys and builds
// the authenticator: client certificates of the cluster CA, the admin
// token, ServiceAccount tokens, bootstrap tokens, in upstream's order.
// Bound objects and bootstrap Secrets are read from the stores, which
// exist once buildResources ran (before any request comes).
func (s *Server) newAuthentication(opts Options) error {
	ao := opts.Authentication
	keyFile := ao.ServiceAccountSigningKeyFile
	if keyFile == "" {
		keyFile = filepath.Join(s.dataDir, "pki", pki.ServiceAccountKeyFile)
		if err := pki.EnsureServiceAccountKey(keyFile); err != nil {
			return fmt.Errorf("service account key: %w", err)
		}
	}
	keys, err := serviceaccount.LoadKeys(keyFile, ao.ServiceAccountKeyFiles)
	if err != nil {
		return err
	}
	tokens, err := serviceaccount.New(serviceaccount.Options{
		Issuer: cmp.Or(ao.ServiceAccountIssuer, serviceaccount.DefaultIssuer),
		Keys:   keys,
		Get:    s.getObject,
	})
	if err != nil {
		return err
	}
	pool, err := certutil.NewPoolFromBytes(s.bundle.CAPEM)
	if err != nil {
		return fmt.Errorf("client CA pool from %s: %w", s.bundle.CACertPath, err)
	}
	// The authenticator itself is made by newAuthenticator, once the
	// authorizer exists: it judges impersonation, and with it anonymous
	// requests reach every path for it to judge, as upstream's.
	s.auth = authentication{tokens: tokens, clientCA: pool, options: authn.Options{
		Tokens:          []authn.Token{authn.Admin(s.token)},
		ClientCA:        pool,
		ServiceAccounts: tokens,
		// Upstream's bootstrap authenticator reads its Secret lister only:
		// a made-up token id costs no etcd read.
		BootstrapTokens: authn.NewBootstrapTokens(s.getCachedObject, nil),
		APIAudiences:    tokens.Audiences(),
		Anonymous:       !ao.DisableAnonymousAuth,
	}}
	// Upstream serves the discovery documents only for an https issuer.
	if u, err := url.Parse(tokens.Issuer()); err == nil && u.Scheme == "https" {
		h, err := tokens.Discovery(func() string { return hostOf(s.url) })
		if err != nil {
			return err
		}
		s.auth.handlers = map[string]http.Handler{serviceaccount.OpenIDConfigPath: h, serviceaccount.JWKSPath: h}
	}
	return nil
}

// newAuthenticator makes the authenticator newAuthentication prepared,
// with the authorization mode's authorizer (newAuthorizer ran) and the
// embedder's static tokens.
func (s *Server) newAuthenticator(opts Options) (err error) {
	o := s.auth.options
	o.Tokens = append(slices.Clip(o.Tokens), opts.StaticTokens...)
	// Under AlwaysAllow alone an anonymous request would be allowed
	// everything (as upstream's would): Kite keeps it to the health and
	// issuer discovery paths instead, and impersonation allowed, as before
	// authorization existed.
	if !slices.Equal(s.authz.Modes(), []string{authz.ModeAlwaysAllow}) {
		o.Authorizer = s.authz
	}
	s.auth.authenticator, err = authn.New(o)
	return err
}

// hostOf is the host:port of the server's URL.
func hostOf(serverURL string) string {
	u, err := url.Parse(serverURL)
	if err != nil {
		return ""
	}
	return u.Host
}

// getObject reads an object of the built-in resources from its store at
// resourceVersion 0: from the watch cache, without a round trip to etcd.
// What the cache does not have yet is read again from etcd, as upstream's
// token getter falls back from its informers to a live read: a pod
// created a moment ago (its create acknowledged, its event not yet in
// the cache) can have a token bound to it at once.
func (s *Server) getObject(ctx context.Context, resource, namespace, name string) (runtime.Object, error) {
	store := s.resources.Store(resource)
	if store == nil {
		return nil, fmt.Errorf("no store of %s", resource)
	}
	obj, err := store.Get(ctx, namespace, name, &metav1.GetOptions{ResourceVersion: "0"})
	if apierrors.IsNotFound(err) {
		return store.Get(ctx, namespace, name, &metav1.GetOptions{})
	}
	return obj, err
}

// getCachedObject reads an object from the watch cache only.
func (s *Server) getCachedObject(ctx context.Context, resource, namespace, name string) (runtime.Object, error) {
	store := s.resources.Store(resource)
	if store == nil {
		return nil, fmt.Errorf("no store of %s", resource)
	}
	return store.Get(ctx, namespace, name, &metav1.GetOptions{ResourceVersion: "0"})
}

// hooks connect serviceaccounts/token and tokenreviews to the
// authenticator.
func (a *authentication) hooks() builtin.Authentication {
	return builtin.Authentication{Tokens: a.tokens, Reviewer: a}
}

// ReviewToken and APIAudiences make a the tokenreviews' reviewer: the
// authenticator's, which newAuthenticator makes after the resources are
// built (and before any request is served).
func (a *authentication) ReviewToken(ctx context.Context, token string, audiences []string) (*authenticator.Response, bool, error) {
	return a.authenticator.ReviewToken(ctx, token, audiences)
}

// APIAudiences are the authenticator's.
func (a *authentication) APIAudiences() []string { return a.authenticator.APIAudiences() }

// serving is the API's TLS configuration: the serving certificate, and
// client certificates asked for (not required, so that token clients
// connect) and checked by the authenticator, as kube-apiserver does with
// --client-ca-file: a certificate of another CA then gets 401, not a
// failed handshake.
func (a *authentication) serving(base *tls.Config) *tls.Config {
	c := base.Clone()
	c.ClientAuth = tls.RequestClientCert
	c.ClientCAs = a.clientCA // tells clients which CA's certificate to send
	return c
}

// DefaultUserCertificateValidity is how long the certificates of AddUser
// and "kite kubeconfig --user" live.
const DefaultUserCertificateValidity = 365 * 24 * time.Hour

// AddUser returns a client configuration for a user in groups: a client
// certificate from the cluster CA (CN the user, O the groups), as
// envtest's AddUser gives. The user may do what the authorizer lets it;
// put it in system:masters to be an admin.
func (s *Server) AddUser(user string, groups []string) (*rest.Config, error) {
	cert, err := s.bundle.IssueUser(user, groups, DefaultUserCertificateValidity)
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := pki.PEM(cert)
	if err != nil {
		return nil, err
	}
	return &rest.Config{
		Host:            s.url,
		TLSClientConfig: rest.TLSClientConfig{CAData: s.bundle.CAPEM, CertData: certPEM, KeyData: keyPEM},
		QPS:             -1,
	}, nil
}
