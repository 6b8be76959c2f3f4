package apiserver_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/kitetest"
)

// shared is the control plane the tests and fuzz targets of this package
// send requests to through real HTTPS (one per test binary: each fuzz
// worker is one); tests that need other limits start their own.
var shared *kite.Server

func TestMain(m *testing.M) { kitetest.Main(m, func(s *kite.Server) { shared = s }) }

// newNamespace creates a namespace of its own for a test.
func newNamespace(t *testing.T, srv *kite.Server) string {
	t.Helper()
	client := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ns, err := client.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

// send sends one request with the admin credentials and returns the
// status code, the body and, when the body is a Status, the Status.
func send(t testing.TB, srv *kite.Server, method, path, contentType string, body []byte) (int, []byte, metav1.Status) {
	t.Helper()
	hc, err := rest.HTTPClientFor(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL()+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	var st metav1.Status
	if json.Unmarshal(data, &st) != nil || st.Kind != "Status" {
		st = metav1.Status{}
	}
	return resp.StatusCode, data, st
}
