package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/kite-project/kite"
)

// /debug/pprof/ serves Go's profiles to the admin, as kube-apiserver's
// --profiling does, and nothing to a client without credentials (403,
// as to any anonymous request RBAC does not allow).
func TestProfilesServedToAuthenticatedClients(t *testing.T) {
	admin := config(t)
	cases := []struct {
		cfg      *rest.Config
		path     string
		code     int
		contains string
	}{
		{admin, "/debug/pprof/", http.StatusOK, "goroutine"},
		{admin, "/debug/pprof/goroutine?debug=1", http.StatusOK, "goroutine profile:"},
		{admin, "/debug/pprof/heap?debug=1", http.StatusOK, "heap profile:"},
		// Anonymous, as upstream: authenticated as system:anonymous, and
		// not authorized for the path.
		{rest.AnonymousClientConfig(admin), "/debug/pprof/", http.StatusForbidden, ""},
	}
	for _, tc := range cases {
		if code, body := getPath(t, tc.cfg, tc.path); code != tc.code || !strings.Contains(body, tc.contains) {
			t.Errorf("GET %s: %d, body starting %.60q; want %d with %q", tc.path, code, body, tc.code, tc.contains)
		}
	}
}

func TestProfilesAreOffUnlessAsked(t *testing.T) {
	srv, err := kite.Start(context.Background(), kite.Options{EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hc, err := rest.HTTPClientFor(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(srv.URL() + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /debug/pprof/ with Profiling off: %d, want 404", resp.StatusCode)
	}
}
