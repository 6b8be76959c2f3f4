package authn_test

import (
	"context"
	"net/http/httptest"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite/apiserver/authn"
)

// denyImpersonatingGroups allows every impersonation but of groups,
// with a reason, as an RBAC authorizer without a binding would.
var denyImpersonatingGroups = authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetVerb() == "impersonate" && a.GetResource() == "groups" {
		return authorizer.DecisionNoOpinion, "no RBAC policy matched", nil
	}
	return authorizer.DecisionAllow, "", nil
})

func serverWith(t *testing.T, opts authn.Options) *httptest.Server {
	t.Helper()
	opts.Tokens = []authn.Token{authn.Admin(token)}
	a, err := authn.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Wrap(echo))
	t.Cleanup(srv.Close)
	return srv
}

func TestImpersonation(t *testing.T) {
	for _, tc := range []struct {
		name        string
		authz       authorizer.Authorizer
		headers     map[string][]string
		wantCode    int
		wantBody    string // for 200
		wantMessage string // for errors
	}{
		{"no authorizer allows a user", nil, map[string][]string{"Impersonate-User": {"bob"}}, 200, `bob auth=""`, ""},
		{"no authorizer allows a service account", nil, map[string][]string{"Impersonate-User": {"system:serviceaccount:ns:sa"}}, 200, `system:serviceaccount:ns:sa auth=""`, ""},
		{"a group without a user is a bad request", nil, map[string][]string{"Impersonate-Group": {"g"}}, 400, "", "requested [group g] without impersonating a user"},
		{"authorizer allows the user", denyImpersonatingGroups, map[string][]string{"Impersonate-User": {"bob"}}, 200, `bob auth=""`, ""},
		{"authorizer refuses the group", denyImpersonatingGroups, map[string][]string{"Impersonate-User": {"bob"}, "Impersonate-Group": {"admins"}}, 403, "",
			`groups "admins" is forbidden: User "kite-admin" cannot impersonate resource "groups" in API group "" at the cluster scope: no RBAC policy matched`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := serverWith(t, authn.Options{Authorizer: tc.authz})
			headers := map[string][]string{"Authorization": {"Bearer " + token}}
			for k, vs := range tc.headers {
				headers[k] = vs
			}
			resp, body := roundTrip(t, srv, "/api/v1/pods", headers)
			if resp.StatusCode != tc.wantCode {
				t.Fatalf("code %d, want %d: %s", resp.StatusCode, tc.wantCode, body)
			}
			if tc.wantCode == 200 {
				if string(body) != tc.wantBody {
					t.Errorf("body %q, want %q", body, tc.wantBody)
				}
				return
			}
			if st := status(t, body); st.Message != tc.wantMessage || st.Code != int32(tc.wantCode) {
				t.Errorf("status %+v, want message %q", st, tc.wantMessage)
			}
		})
	}
}

// TestImpersonationRefusedThroughClientGo: client-go sees upstream's
// Forbidden error.
func TestImpersonationRefusedThroughClientGo(t *testing.T) {
	srv := serverWith(t, authn.Options{Authorizer: denyImpersonatingGroups})
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, BearerToken: token,
		Impersonate: rest.ImpersonationConfig{UserName: "bob", Groups: []string{"admins"}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.CoreV1().RESTClient().Get().AbsPath("/api").DoRaw(t.Context())
	if !apierrors.IsForbidden(err) {
		t.Fatalf("error %v, want Forbidden", err)
	}
}

// TestAnonymous: requests without credentials reach every path only with
// Anonymous and an authorizer to judge them; otherwise the health and
// issuer discovery paths alone, or (Anonymous off, authorizer on) none.
func TestAnonymous(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     authn.Options
		path     string
		wantCode int
	}{
		{"no authorizer: API path refused", authn.Options{Anonymous: true}, "/api/v1/pods", 401},
		{"no authorizer: health served", authn.Options{Anonymous: true}, "/readyz", 200},
		{"no authorizer: issuer discovery served", authn.Options{Anonymous: true}, "/.well-known/openid-configuration", 200},
		{"no authorizer: jwks served", authn.Options{Anonymous: true}, "/openid/v1/jwks", 200},
		{"authorizer: API path goes on as anonymous", authn.Options{Anonymous: true, Authorizer: denyImpersonatingGroups}, "/api/v1/pods", 200},
		{"authorizer, anonymous off: API path refused", authn.Options{Authorizer: denyImpersonatingGroups}, "/api/v1/pods", 401},
		{"authorizer, anonymous off: health refused, as upstream", authn.Options{Authorizer: denyImpersonatingGroups}, "/healthz", 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := serverWith(t, tc.opts)
			resp, body := roundTrip(t, srv, tc.path, nil)
			if resp.StatusCode != tc.wantCode {
				t.Fatalf("code %d, want %d: %s", resp.StatusCode, tc.wantCode, body)
			}
			if tc.wantCode == 200 && string(body) != `system:anonymous auth=""` {
				t.Errorf("body %q, want the anonymous user", body)
			}
		})
	}
}
