package authn

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
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
	// Tokens are the accepted bearer tokens. At least one is required.
	Tokens []Token
}

// Authenticator checks bearer tokens. It is safe for concurrent use and
// immutable once built.
type Authenticator struct {
	request authenticator.Request
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
	return &Authenticator{request: bearertoken.New(ts)}, nil
}

// Wrap returns next behind authentication.
func (a *Authenticator) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, ok, err := a.request.AuthenticateRequest(r)
		switch {
		case ok:
			r = r.WithContext(genericapirequest.WithUser(r.Context(), resp.User))
		case err == nil && IsHealthPath(r.URL.Path):
			r = r.WithContext(genericapirequest.WithUser(r.Context(), anonymous))
		default:
			Unauthorized(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

var anonymous = &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}

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

// Unauthorized writes upstream's 401: a metav1.Status with reason
// Unauthorized. On HTTP/2 it also asks to close the connection, so an
// unauthenticated client cannot keep a multiplexed connection open.
func Unauthorized(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 2 {
		w.Header().Set("Connection", "close")
	}
	status := apierrors.NewUnauthorized("Unauthorized").Status()
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	body, err := json.Marshal(status)
	if err != nil {
		// A fixed struct always marshals; keep the status code regardless.
		body = []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusUnauthorized)
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
