package server

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite/agent/runtime/process"
	"github.com/kite-project/kite/pki"
)

// serve starts a Server over an empty process runtime on 127.0.0.1 with a
// CA of pki and the token "admin", and returns its URL and the CA bundle.
func serve(t *testing.T) (string, *pki.Bundle) {
	t.Helper()
	ca, err := pki.Ensure(filepath.Join(t.TempDir(), "pki"), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := process.New(process.Options{RootDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CAPEM)
	cert, err := ca.Issue(pki.IssueOptions{CommonName: "node", Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: "uid1"}}
	s, err := New(Options{Runtime: rt, ClientCAs: pool, AdminToken: "admin", Certificate: cert, Pods: func() []*v1.Pod { return []*v1.Pod{pod} }})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	// t.Context ends before the cleanups run: Serve returns then.
	go func() { done <- s.Serve(t.Context(), ln) }()
	t.Cleanup(func() {
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "https://" + ln.Addr().String(), ca
}

func TestOnlyTheAPIServerAndTheAdminGetIn(t *testing.T) {
	url, ca := serve(t)
	other, err := pki.Ensure(filepath.Join(t.TempDir(), "other"), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	issue := func(b *pki.Bundle, cn string, client bool) []tls.Certificate {
		c, err := b.Issue(pki.IssueOptions{CommonName: cn, Client: client})
		if err != nil {
			t.Fatal(err)
		}
		return []tls.Certificate{c}
	}
	cases := []struct {
		name  string
		certs []tls.Certificate
		token string
		want  int
	}{
		{"nothing", nil, "", http.StatusUnauthorized},
		{"admin token", nil, "admin", http.StatusOK},
		{"another token", nil, "guess", http.StatusUnauthorized},
		{"API server's client certificate", issue(ca, pki.KubeletClientCommonName, true), "", http.StatusOK},
		{"another name from the CA", issue(ca, "someone", true), "", http.StatusUnauthorized},
		{"a serving certificate of the CA", issue(ca, pki.KubeletClientCommonName, false), "", http.StatusUnauthorized},
		{"the right name from another CA", issue(other, pki.KubeletClientCommonName, true), "", http.StatusUnauthorized},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: c.certs}} //nolint:gosec
			defer tr.CloseIdleConnections()
			for _, path := range []string{"/healthz", "/pods", "/containerLogs/default/p/c"} {
				req, _ := http.NewRequest(http.MethodGet, url+path, nil)
				if c.token != "" {
					req.Header.Set("Authorization", "Bearer "+c.token)
				}
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				want := c.want
				if want == http.StatusOK && path == "/containerLogs/default/p/c" {
					want = http.StatusNotFound // in, but no such pod runs
				}
				if resp.StatusCode != want {
					t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
				}
			}
		})
	}
}

func TestEndpointsAnswerAsTheKubelet(t *testing.T) {
	url, _ := serve(t)
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec
	defer tr.CloseIdleConnections()
	get := func(path string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, url+path, nil)
		req.Header.Set("Authorization", "Bearer admin")
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	cases := []struct {
		path string
		code int
		body string
	}{
		{"/healthz", 200, "ok"},
		{"/containerLogs/default/nosuch/c", 404, `pod "nosuch" does not exist`},
		{"/containerLogs/default/nosuch/c?tailLines=x", 400, `{"message": "Unable to decode query."}`},
		{"/containerLogs/default/nosuch/c?tailLines=-1", 422, `{"message": "Invalid request."}`},
		{"/containerLogs/default/nosuch/c?sinceSeconds=0", 422, `{"message": "Invalid request."}`},
		// The kubelet's answers to sessions that reach no container
		// (server.go getExec/getAttach/getPortForward, kubelet_pods.go
		// GetExec/GetAttach/GetPortForward): the agent runs pod p, but
		// nothing of it runs.
		{"/exec/default/nosuch/c?command=true&output=1", 404, "pod does not exist"},
		{"/attach/default/nosuch/c?output=1", 404, "pod does not exist"},
		{"/portForward/default/nosuch", 404, "pod does not exist"},
		{"/exec/default/p/c?command=true&output=1", 500, `container not found ("c")`},
		{"/exec/default/p/uid1/c?command=true&output=1", 500, `container not found ("c")`},
		{"/attach/default/p/c?output=1", 500, "container c not found in pod p_default"},
		{"/portForward/default/p", 500, `pod not found ("p_default")`},
		{"/portForward/default/p/other", 404, "pod not found"},
	}
	for _, c := range cases {
		if code, body := get(c.path); code != c.code || body != c.body {
			t.Errorf("GET %s = %d %q, want %d %q", c.path, code, body, c.code, c.body)
		}
	}
	code, body := get("/pods")
	var list v1.PodList
	if err := json.Unmarshal([]byte(body), &list); code != 200 || err != nil || len(list.Items) != 1 || list.Items[0].Name != "p" || list.Kind != "PodList" {
		t.Errorf("GET /pods = %d %s (%v)", code, body, err)
	}
}
