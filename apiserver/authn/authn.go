package authn

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/union"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/kite-project/kite/apiserver/authn/serviceaccount"
)

// Token is one accepted bearer token and the user it authenticates.
type Token struct {
	Value string
	User  user.Info
}

// Admin is the admin token's entry: user kite-admin in system:masters,
// the group kube-apiserver's bootstrap RBAC binds to cluster-admin.
func Admin(value string) Token {
	return Token{Value: value, User: &user.DefaultInfo{
		Name:   "kite-admin",
		Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated},
	}}
}

// Options configure an Authenticator.
type Options struct {
	// Tokens are the static bearer tokens (the admin's). At least one is
	// required.
	Tokens []Token
	// ClientCA, when set, authenticates client certificates that chain to
	// it, for client authentication: the user is the subject's common
	// name, its groups the organizations (kube-apiserver's
	// --client-ca-file). The TLS server must ask for certificates
	// (tls.RequestClientCert): this checks them.
	ClientCA *x509.CertPool
	// ServiceAccounts verifies ServiceAccount JWTs (audience-aware).
	ServiceAccounts authenticator.Token
	// BootstrapTokens verifies bootstrap tokens (audience-agnostic: they
	// are good for the API's audiences only).
	BootstrapTokens authenticator.Token
	// APIAudiences are the audiences a request is for (--api-audiences,
	// the service account issuer by default). Empty: tokens' audiences
	// are not checked.
	APIAudiences authenticator.Audiences
	// Anonymous is kube-apiserver's --anonymous-auth: a request without
	// credentials goes on as system:anonymous (group
	// system:unauthenticated), for the authorizer to judge. It takes
	// effect with an Authorizer only: without one every request would be
	// allowed, so anonymous requests are then let through only to the
	// health endpoints and the service account issuer discovery, as Kite
	// always did. With an Authorizer and Anonymous false, requests
	// without credentials get 401 everywhere, as upstream.
	Anonymous bool
	// Authorizer, when set, decides impersonation (the impersonate verb
	// on users, groups, serviceaccounts, uids and userextras) and turns
	// Anonymous on. Nil allows every impersonation, as the AlwaysAllow
	// mode would.
	Authorizer authorizer.Authorizer
}

// Authenticator authenticates requests in upstream's order (client
// certificate, then bearer token: static, ServiceAccount, bootstrap),
// adds system:authenticated, falls back to anonymous as Options say, then
// applies impersonation. It is safe for concurrent use and immutable once
// built.
type Authenticator struct {
	request authenticator.Request
	// tokens are the bearer token authenticators, for TokenReview.
	tokens    authenticator.Token
	apiAuds   authenticator.Audiences
	anonymous func(path string) bool
	authz     authorizer.Authorizer
}

// New builds an Authenticator from opts.
func New(opts Options) (*Authenticator, error) {
	if len(opts.Tokens) == 0 {
		return nil, errors.New("authn: at least one token is required")
	}
	ts := &tokens{}
	for i, t := range opts.Tokens {
		if strings.TrimSpace(t.Value) == "" || t.User == nil || t.User.GetName() == "" {
			return nil, fmt.Errorf("authn: token %d has an empty value or no user", i)
		}
		ts.entries = append(ts.entries, entry{digest: sha256.Sum256([]byte(t.Value)), user: t.User})
	}
	// Upstream's order of token authenticators: token file, service
	// account tokens, bootstrap tokens. The audience-agnostic ones are
	// good for the API's audiences only.
	chain := []authenticator.Token{authenticator.WrapAudienceAgnosticToken(opts.APIAudiences, ts)}
	if opts.ServiceAccounts != nil {
		chain = append(chain, opts.ServiceAccounts)
	}
	if opts.BootstrapTokens != nil {
		chain = append(chain, authenticator.WrapAudienceAgnosticToken(opts.APIAudiences, opts.BootstrapTokens))
	}
	tokenAuth := tokenunion.New(chain...)
	var requests []authenticator.Request
	if opts.ClientCA != nil {
		requests = append(requests, x509request.New(x509.VerifyOptions{
			Roots:     opts.ClientCA,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}, x509request.CommonNameUserConversion))
	}
	requests = append(requests, bearertoken.New(tokenAuth))
	return &Authenticator{
		request:   group.NewAuthenticatedGroupAdder(union.New(requests...)),
		tokens:    tokenAuth,
		apiAuds:   opts.APIAudiences,
		anonymous: anonymousPaths(opts.Anonymous, opts.Authorizer != nil),
		authz:     opts.Authorizer,
	}, nil
}

// Wrap returns next behind authentication and impersonation.
func (a *Authenticator) Wrap(next http.Handler) http.Handler {
	next = a.impersonation(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(a.apiAuds) > 0 {
			r = r.WithContext(authenticator.WithAudiences(r.Context(), a.apiAuds))
		}
		resp, ok, err := a.request.AuthenticateRequest(r)
		switch {
		case ok && audiencesAcceptable(a.apiAuds, resp.Audiences):
			r = r.WithContext(genericapirequest.WithUser(r.Context(), resp.User))
		case !ok && err == nil && a.anonymous(r.URL.Path):
			// No credential at all: upstream's anonymous authenticator
			// comes last and only when the others found nothing (a bad
			// credential is an error, never anonymous).
			r = r.WithContext(genericapirequest.WithUser(r.Context(), anonymous()))
		default:
			Unauthorized(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// anonymousPaths says where a request without credentials goes on as
// system:anonymous: with an authorizer to judge it, everywhere when
// anonymous authentication is on and nowhere when off (upstream's
// --anonymous-auth); without one, only on the public paths, whatever
// anonymous says, since nothing would stop it elsewhere.
func anonymousPaths(anonymous, authorizer bool) func(path string) bool {
	switch {
	case authorizer && anonymous:
		return func(string) bool { return true }
	case authorizer:
		return func(string) bool { return false }
	}
	return IsPublicPath
}

// audiencesAcceptable is upstream's check in its authentication filter: a
// response for audiences none of which the API serves is refused.
func audiencesAcceptable(apiAuds, respAuds authenticator.Audiences) bool {
	if len(apiAuds) == 0 || len(respAuds) == 0 {
		return true
	}
	return len(apiAuds.Intersect(respAuds)) > 0
}

// ReviewToken authenticates a bearer token for audiences (the API's when
// empty), as a TokenReview asks: the token authenticators and
// system:authenticated, never anonymous.
func (a *Authenticator) ReviewToken(ctx context.Context, token string, audiences []string) (*authenticator.Response, bool, error) {
	auds := authenticator.Audiences(audiences)
	if len(auds) == 0 {
		auds = a.apiAuds
	}
	if len(auds) > 0 {
		ctx = authenticator.WithAudiences(ctx, auds)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return group.NewAuthenticatedGroupAdder(bearertoken.New(a.tokens)).AuthenticateRequest(req)
}

// APIAudiences are the audiences of the API (a TokenReview's default).
func (a *Authenticator) APIAudiences() []string { return a.apiAuds }

func anonymous() user.Info {
	return &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
}

// IsHealthPath reports whether path is /healthz, /livez, /readyz or a
// subpath of one of them: the paths served without credentials.
func IsHealthPath(path string) bool {
	for _, p := range []string{"/healthz", "/livez", "/readyz"} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// IsPublicPath reports the paths anonymous requests reach when anonymous
// authentication is not fully on: the health endpoints and the service
// account issuer's discovery documents (public keys, which upstream
// grants through system:service-account-issuer-discovery).
func IsPublicPath(path string) bool {
	return IsHealthPath(path) || serviceaccount.IsDiscoveryPath(path)
}

// Unauthorized writes upstream's 401: a metav1.Status with reason
// Unauthorized. On HTTP/2 it also asks to close the connection, so an
// unauthenticated client cannot keep a multiplexed connection open.
func Unauthorized(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 2 {
		w.Header().Set("Connection", "close")
	}
	writeStatus(w, apierrors.NewUnauthorized("Unauthorized"),
		`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`)
}

// writeStatus writes err's Status as JSON; fallback is the body should
// encoding fail (a fixed struct always encodes; the code is kept anyway).
func writeStatus(w http.ResponseWriter, err *apierrors.StatusError, fallback string) {
	status := err.Status()
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	body, merr := json.Marshal(status)
	if merr != nil {
		body = []byte(fallback)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(int(status.Code))
	w.Write(body)
}

type entry struct {
	digest [sha256.Size]byte
	user   user.Info
}

// tokens is the token table. It digests the presented token and compares
// it with every entry without stopping at a match, so the time taken does
// not depend on which entry matched or how much of it did.
type tokens struct {
	entries []entry
}

var _ authenticator.Token = (*tokens)(nil)

func (t *tokens) AuthenticateToken(_ context.Context, value string) (*authenticator.Response, bool, error) {
	d := sha256.Sum256([]byte(value))
	var found user.Info
	for _, e := range t.entries {
		if subtle.ConstantTimeCompare(d[:], e.digest[:]) == 1 {
			found = e.user
		}
	}
	if found == nil {
		return nil, false, nil
	}
	return &authenticator.Response{User: found}, true, nil
}
