package apiserver_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/kite-project/kite/apiserver"
	"github.com/kite-project/kite/registry"
	"github.com/kite-project/kite/registry/builtin"
)

// groupAuthenticator makes every request a user in the groups named by
// its X-Groups header: the requests' identity is what the in-flight limit
// looks at (system:masters is not limited).
type groupAuthenticator struct{}

func (groupAuthenticator) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u := &user.DefaultInfo{Name: "u", Groups: strings.Split(r.Header.Get("X-Groups"), ",")}
		next.ServeHTTP(w, r.WithContext(genericapirequest.WithUser(r.Context(), u)))
	})
}

// newLimitedServer serves an apiserver.Server with opts (its stores the
// virtual ones, which need no etcd) and two extra paths: /slow/ holds
// each request until release is closed (telling entered first), /fast/
// answers at once.
func newLimitedServer(t *testing.T, opts apiserver.Options) (url string, entered <-chan struct{}, release func()) {
	t.Helper()
	scheme, err := apiserver.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	for _, strat := range builtin.All(time.Now) {
		if strat.Virtual != nil {
			st, err := registry.New(registry.Options{Strategy: strat})
			if err != nil {
				t.Fatal(err)
			}
			opts.Stores = append(opts.Stores, st)
		}
	}
	in := make(chan struct{}, 16)
	gate := make(chan struct{})
	opts.Scheme = scheme
	opts.Authenticator = groupAuthenticator{}
	opts.Extra = map[string]http.Handler{
		"/slow/": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			in <- struct{}{}
			<-gate
		}),
		"/fast/": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}),
	}
	api, err := apiserver.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(func() { release(); srv.Close() })
	return srv.URL, in, release
}

// TestRequestsPastTheInflightLimitGet429 fills the read-only (2) and
// mutating (1) limits with requests that wait, then checks who else gets
// in: upstream's plain-text 429 with Retry-After for a request of a full
// kind, service for the other kind's, for watches and for system:masters,
// and service again once the slots are given back.
func TestRequestsPastTheInflightLimitGet429(t *testing.T) {
	url, entered, release := newLimitedServer(t, apiserver.Options{MaxRequestsInFlight: 2, MaxMutatingRequestsInFlight: 1})
	client := &http.Client{Timeout: 10 * time.Second}
	do := func(method, path, groups string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Groups", groups)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	var held sync.WaitGroup
	hold := func(method string, n int) {
		for range n {
			held.Go(func() { do(method, "/slow/", "") })
			select {
			case <-entered:
			case <-time.After(10 * time.Second):
				t.Fatalf("a %s to /slow/ was not served", method)
			}
		}
	}
	defer held.Wait()
	defer release()

	hold("GET", 2)
	tests := []struct {
		name, method, path, groups string
		code                       int
	}{
		{"a read past the read-only limit", "GET", "/fast/", "", 429},
		{"a write while reads are full", "POST", "/fast/", "", 200},
		{"a watch is long-running", "GET", "/fast/?watch=true", "", 200},
		{"system:masters is not limited", "GET", "/fast/", "system:masters", 200},
	}
	check := func(name, method, path, groups string, code int) {
		resp, body := do(method, path, groups)
		if resp.StatusCode != code {
			t.Errorf("%s: %s %s got %d %q, want %d", name, method, path, resp.StatusCode, body, code)
		}
		if code == 429 && (resp.Header.Get("Retry-After") != "1" || body != "Too many requests, please try again later.\n" ||
			!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain")) {
			t.Errorf("%s: 429 with Retry-After %q, Content-Type %q, body %q; want upstream's", name,
				resp.Header.Get("Retry-After"), resp.Header.Get("Content-Type"), body)
		}
	}
	for _, tc := range tests {
		check(tc.name, tc.method, tc.path, tc.groups, tc.code)
	}
	hold("POST", 1)
	check("a write past the mutating limit", "PUT", "/fast/", "", 429)
	check("a health check is a read", "GET", "/readyz", "", 429)
	release()
	held.Wait()
	check("a read once the slots are back", "GET", "/fast/", "", 200)
	check("a write once the slots are back", "DELETE", "/fast/", "", 200)
}
