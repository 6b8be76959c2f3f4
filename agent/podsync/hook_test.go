package podsync

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestHTTPHookClient: httpGet lifecycle hooks go through the agent's own
// client, as the kubelet's: an HTTPS hook of a pod with a certificate
// the agent cannot verify is sent (http.DefaultClient refused it), and a
// redirect to another host is not followed (its response ends the hook).
func TestHTTPHookClient(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	otherURL, _ := url.Parse(other.URL)
	// localhost is another host than 127.0.0.1 to a redirect check.
	otherURL.Host = net.JoinHostPort("localhost", otherURL.Port())
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherURL.String()+"/x", http.StatusFound)
	})
	tlsServer := httptest.NewTLSServer(mux)
	defer tlsServer.Close()
	plain := httptest.NewServer(mux)
	defer plain.Close()
	port := func(s *httptest.Server) intstr.IntOrString {
		u, _ := url.Parse(s.URL)
		p, _ := strconv.Atoi(u.Port())
		return intstr.FromInt32(int32(p))
	}
	tests := []struct {
		name    string
		scheme  v1.URIScheme
		server  *httptest.Server
		path    string
		wantErr bool
	}{
		{"https with a certificate the agent cannot verify", v1.URISchemeHTTPS, tlsServer, "/ok", false},
		{"plain http", v1.URISchemeHTTP, plain, "/ok", false},
		{"a 500 fails the hook", v1.URISchemeHTTP, plain, "/fail", true},
		{"a redirect to another host is not followed", v1.URISchemeHTTP, plain, "/away", false},
	}
	m := &Manager{opts: Options{HostIPs: []string{"127.0.0.1"}}, hooks: newHookClient()}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := m.httpHook(context.Background(), &v1.Container{Name: "c"}, &v1.HTTPGetAction{Scheme: tc.scheme, Port: port(tc.server), Path: tc.path}, "127.0.0.1")
			if (err != nil) != tc.wantErr {
				t.Errorf("hook error = %v, want error %v", err, tc.wantErr)
			}
		})
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("a redirect to another host was followed %d times", n)
	}
}
