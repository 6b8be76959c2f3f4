package auth_test

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"

	certutil "k8s.io/client-go/util/cert"
)

// transportTrusting is an HTTP transport that trusts the cluster CA and
// sends no credentials.
func transportTrusting(t *testing.T, caPEM []byte) *http.Transport {
	t.Helper()
	pool, err := certutil.NewPoolFromBytes(caPEM)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// base64URLJSON decodes a JWT segment.
func base64URLJSON(t *testing.T, segment string) (map[string]any, error) {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(segment)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m, nil
}
