package apiserver_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// TestWatchTimeoutSecondsZeroIsTheDefault checks that timeoutSeconds=0
// means the default watch duration (at least the minimum request timeout,
// 30 minutes) as upstream, not a watch that ends at once and makes its
// client re-watch in a loop: the watch is still open when the client
// gives up after a second.
func TestWatchTimeoutSecondsZeroIsTheDefault(t *testing.T) {
	ns := newNamespace(t, shared)
	hc, err := rest.HTTPClientFor(shared.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, query := range []string{"watch=true&timeoutSeconds=0", "watch=true"} {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		req, err := http.NewRequestWithContext(ctx, "GET", shared.URL()+"/api/v1/namespaces/"+ns+"/configmaps?"+query, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		start := time.Now()
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if resp.StatusCode != 200 || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: %d, the watch ended after %s (%v); want it open until the client's deadline", query, resp.StatusCode, time.Since(start), err)
		}
	}
}
