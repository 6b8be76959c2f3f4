package authn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.uber.org/goleak"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite/apiserver/authn"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const token = "the-admin-token"

// echo answers with the user it was given and whether the credential
// reached it.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	u, _ := genericapirequest.UserFrom(r.Context())
	fmt.Fprintf(w, "%s auth=%q", u.GetName(), r.Header.Get("Authorization"))
})

func server(t *testing.T) *httptest.Server {
	t.Helper()
	a, err := authn.New(authn.Options{Tokens: []authn.Token{authn.Admin(token)}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Wrap(echo))
	t.Cleanup(srv.Close)
	return srv
}

func TestWhoGetsThrough(t *testing.T) {
	srv := server(t)
	tests := []struct {
		name, path, authorization string
		wantCode                  int
		wantBody                  string
	}{
		{"admin token on an API path", "/api/v1/pods", "Bearer " + token, 200, `kite-admin auth=""`},
		{"scheme is case-insensitive", "/api/v1/pods", "bearer " + token, 200, `kite-admin auth=""`},
		{"admin token on health", "/readyz", "Bearer " + token, 200, `kite-admin auth=""`},
		{"no token on API path", "/api/v1/pods", "", 401, ""},
		{"no token on /version", "/version", "", 401, ""},
		{"no token on /metrics", "/metrics", "", 401, ""},
		{"no token on /openapi/v3", "/openapi/v3", "", 401, ""},
		{"no token on /", "/", "", 401, ""},
		{"wrong token", "/api/v1/pods", "Bearer nope", 401, ""},
		{"token prefix", "/api/v1/pods", "Bearer " + token[:5], 401, ""},
		{"token with suffix", "/api/v1/pods", "Bearer " + token + "x", 401, ""},
		{"empty bearer", "/api/v1/pods", "Bearer ", 401, ""},
		{"no token on /healthz", "/healthz", "", 200, `system:anonymous auth=""`},
		{"no token on /livez", "/livez", "", 200, `system:anonymous auth=""`},
		{"no token on /readyz subpath", "/readyz/etcd", "", 200, `system:anonymous auth=""`},
		{"no token on /healthz?verbose", "/healthz?verbose", "", 200, `system:anonymous auth=""`},
		{"lookalike path is not health", "/healthzfoo", "", 401, ""},
		{"wrong token on health is refused, as upstream", "/healthz", "Bearer nope", 401, ""},
		{"non-bearer scheme counts as no credential", "/livez", "Basic YTpi", 200, `system:anonymous auth="Basic YTpi"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var headers map[string][]string
			if tc.authorization != "" {
				headers = map[string][]string{"Authorization": {tc.authorization}}
			}
			resp, body := roundTrip(t, srv, tc.path, headers)
			if resp.StatusCode != tc.wantCode {
				t.Fatalf("code %d, want %d; body %s", resp.StatusCode, tc.wantCode, body)
			}
			if tc.wantCode == 200 {
				if string(body) != tc.wantBody {
					t.Errorf("body %q, want %q", body, tc.wantBody)
				}
				return
			}
			st := status(t, body)
			want := metav1.Status{
				TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status:   metav1.StatusFailure, Message: "Unauthorized",
				Reason: metav1.StatusReasonUnauthorized, Code: 401,
			}
			if st.Kind != want.Kind || st.APIVersion != want.APIVersion || st.Status != want.Status ||
				st.Message != want.Message || st.Reason != want.Reason || st.Code != want.Code {
				t.Errorf("status %+v, want %+v", st, want)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("content type %q", ct)
			}
		})
	}
}

// TestClientGoSeesUnauthorized checks that client-go decodes the 401 into
// the error kubectl prints ("You must be logged in to the server").
func TestClientGoSeesUnauthorized(t *testing.T) {
	srv := server(t)
	for _, tc := range []struct {
		name, token string
		wantErr     bool
	}{{"no token", "", true}, {"wrong token", "x", true}, {"admin token", token, false}} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, BearerToken: tc.token})
			if err != nil {
				t.Fatal(err)
			}
			_, err = cs.CoreV1().RESTClient().Get().AbsPath("/api").DoRaw(context.Background())
			if !tc.wantErr {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !apierrors.IsUnauthorized(err) {
				t.Fatalf("error %v (%T), want Unauthorized", err, err)
			}
		})
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts authn.Options
	}{
		{"no tokens", authn.Options{}},
		{"empty token", authn.Options{Tokens: []authn.Token{authn.Admin(" ")}}},
		{"no user", authn.Options{Tokens: []authn.Token{{Value: "x"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := authn.New(tc.opts); err == nil {
				t.Fatal("New accepted bad options")
			}
		})
	}
}

// roundTrip GETs path from srv with headers and returns the response and
// its body.
func roundTrip(t *testing.T, srv *httptest.Server, path string, headers map[string][]string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", srv.URL+path, nil)
	for k, vs := range headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// status decodes an error body.
func status(t *testing.T, body []byte) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("not a Status: %v: %s", err, body)
	}
	return st
}
