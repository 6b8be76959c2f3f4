package http

import (
	"fmt"
	nethttp "net/http"
	"strings"
	"testing"
	"time"

	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/agent/staticpod"
)

// TestExtractPodsFromHTTP mirrors upstream's test of the same name: one Pod
// or a PodList, names suffixed with the node, namespace defaulted.
func TestExtractPodsFromHTTP(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"single pod JSON", podJSON("web", "nginx"), "default/web-node1:nginx"},
		{"single pod YAML", "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: ns}\nspec:\n  containers: [{name: c, image: nginx}]\n", "ns/web-node1:nginx"},
		{"pod list", `{"apiVersion":"v1","kind":"PodList","items":[` + podJSON("a", "i1") + `,` + podJSON("b", "i2") + `]}`, "default/a-node1:i1,default/b-node1:i2"},
		{"empty pod list", `{"apiVersion":"v1","kind":"PodList","items":[]}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, body(tc.body))
			out, rec := runSource(t, Options{URL: srv.URL})
			u := next(t, out)
			if got := names(u.Pods); got != tc.want {
				t.Fatalf("pods %q, want %q", got, tc.want)
			}
			for _, p := range u.Pods {
				if p.Spec.NodeName != nodeName || p.UID == "" || p.Annotations[kubetypes.ConfigHashAnnotationKey] != string(p.UID) || len(p.Spec.Tolerations) != 0 {
					t.Errorf("pod %s not defaulted as an http static pod: %+v", p.Name, p)
				}
			}
			if p := rec.list(); len(p) != 0 {
				t.Errorf("problems %v", p)
			}
		})
	}
}

// TestURLWithHeader mirrors upstream's: the configured headers are sent.
func TestURLWithHeader(t *testing.T) {
	srv := newServer(t, body(podJSON("web", "i")))
	header := nethttp.Header{"Metadata-Flavor": {"Google"}, "X-Multi": {"a", "b"}}
	out, _ := runSource(t, Options{URL: srv.URL, Header: header})
	next(t, out)
	r := <-srv.requests
	if got := r.Header.Get("Metadata-Flavor"); got != "Google" {
		t.Errorf("Metadata-Flavor = %q, want Google", got)
	}
	if got := r.Header.Values("X-Multi"); strings.Join(got, ",") != "a,b" {
		t.Errorf("X-Multi = %v, want [a b]", got)
	}
}

// TestBadResponsesGiveNoUpdate mirrors upstream's TestURLErrorNotExistNoUpdate,
// TestExtractFromHttpBadness and TestExtractInvalidPods, from the first poll
// (nothing is sent, so the source is not seen) and after a good one (the
// good pods stay).
func TestBadResponsesGiveNoUpdate(t *testing.T) {
	tests := []struct {
		name    string
		handler nethttp.HandlerFunc
		reason  string
	}{
		{"not found", status(nethttp.StatusNotFound), kubetypes.ReasonFailedToRead},
		{"server error", status(nethttp.StatusInternalServerError), kubetypes.ReasonFailedToRead},
		{"empty body", body(""), kubetypes.ReasonFailedToParse},
		{"not yaml", body("{{{"), kubetypes.ReasonFailedToParse},
		{"no apiVersion", body(`{"kind":"Pod","metadata":{"name":"p"}}`), kubetypes.ReasonFailedToParse},
		{"not a pod", body(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"}}`), kubetypes.ReasonFailedToParse},
		{"invalid container name", body(strings.Replace(podJSON("web", "i"), `"main"`, `"_main"`, 1)), kubetypes.ReasonFailedValidation},
		{"duplicate volume names", body(strings.Replace(podJSON("web", "i"), `"containers"`, `"volumes":[{"name":"v","emptyDir":{}},{"name":"v","emptyDir":{}}],"containers"`, 1)), kubetypes.ReasonFailedValidation},
		{"one bad item in a list", body(`{"apiVersion":"v1","kind":"PodList","items":[` + podJSON("a", "i") + `,` + podJSON("b", "") + `]}`), kubetypes.ReasonFailedValidation},
		{"too large", body(strings.Repeat(" ", staticpod.MaxManifestBytes+1)), kubetypes.ReasonFailedToRead},
	}
	for _, tc := range tests {
		t.Run("first poll/"+tc.name, func(t *testing.T) {
			srv := newServer(t, tc.handler)
			out, rec := runSource(t, Options{URL: srv.URL})
			noUpdateFor(t, srv, out, 3)
			p := rec.list()
			if len(p) != 1 || p[0].Reason != tc.reason || p[0].Where != srv.URL {
				t.Fatalf("problems %v, want one %s about %s (reported once while it lasts)", p, tc.reason, srv.URL)
			}
		})
		t.Run("after a good poll/"+tc.name, func(t *testing.T) {
			srv := newServer(t, body(podJSON("web", "i")))
			out, rec := runSource(t, Options{URL: srv.URL})
			next(t, out)
			srv.set(tc.handler)
			noUpdateFor(t, srv, out, 3)
			if p := rec.list(); len(p) != 1 || p[0].Reason != tc.reason {
				t.Fatalf("problems %v, want one %s", p, tc.reason)
			}
			// The good content again: the pods did not change, nothing to send.
			srv.set(body(podJSON("web", "i")))
			drainRequests(srv)
			noUpdateFor(t, srv, out, 2)
		})
	}
}

func TestConnectionErrorsGiveNoUpdate(t *testing.T) {
	srv := newServer(t, body(podJSON("web", "i")))
	url := srv.URL
	srv.Close() // nothing listens there any more
	out, rec := runSource(t, Options{URL: url})
	deadline := time.Now().Add(waitTimeout)
	for len(rec.list()) == 0 && time.Now().Before(deadline) {
		select {
		case u := <-out:
			t.Fatalf("update from an unreachable URL: %v", names(u.Pods))
		case <-time.After(10 * time.Millisecond):
		}
	}
	if p := rec.list(); len(p) != 1 || p[0].Reason != kubetypes.ReasonFailedToRead {
		t.Fatalf("problems %v, want one FailedToRead", p)
	}
}

func TestTimeoutKeepsPods(t *testing.T) {
	srv := newServer(t, body(podJSON("web", "i")))
	out, rec := runSource(t, Options{URL: srv.URL, Timeout: 200 * time.Millisecond})
	next(t, out)
	before := len(rec.list()) // a loaded machine may already have timed out once
	release := make(chan struct{})
	srv.set(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	drainRequests(srv)
	noUpdateFor(t, srv, out, 3)
	close(release)
	p := rec.list()[before:]
	if len(p) != 1 || p[0].Reason != kubetypes.ReasonFailedToRead || !strings.Contains(p[0].Err.Error(), "Timeout") {
		t.Fatalf("problems %v, want one FailedToRead timeout", p)
	}
}

// TestUnchangedBodyGivesNoUpdate: identical bodies are not sent again, a
// changed one is, on the next poll.
func TestUnchangedBodyGivesNoUpdate(t *testing.T) {
	srv := newServer(t, body(podJSON("web", "v1")))
	out, _ := runSource(t, Options{URL: srv.URL})
	next(t, out)
	drainRequests(srv)
	noUpdateFor(t, srv, out, 3)
	srv.set(body(podJSON("web", "v2")))
	if got := names(next(t, out).Pods); got != "default/web-node1:v2" {
		t.Fatalf("after change: %q", got)
	}
}

// TestConditionalRequests: ETag and Last-Modified are sent back, and 304
// gives no update.
func TestConditionalRequests(t *testing.T) {
	const etag, modified = `"v1"`, "Sun, 29 Nov 2026 10:00:00 GMT"
	content := podJSON("web", "v1")
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(nethttp.StatusNotModified)
			return
		}
		w.Header().Set("ETag", etag)
		w.Header().Set("Last-Modified", modified)
		fmt.Fprint(w, content)
	})
	out, rec := runSource(t, Options{URL: srv.URL})
	next(t, out)
	if first := <-srv.requests; first.Header.Get("If-None-Match") != "" || first.Header.Get("If-Modified-Since") != "" {
		t.Fatalf("first request had validators: %v", first.Header)
	}
	for _, r := range noUpdateFor(t, srv, out, 3) {
		if r.Header.Get("If-None-Match") != etag || r.Header.Get("If-Modified-Since") != modified {
			t.Fatalf("later request headers %v, want If-None-Match %s and If-Modified-Since %s", r.Header, etag, modified)
		}
	}
	if p := rec.list(); len(p) != 0 {
		t.Fatalf("problems %v", p)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts Options
	}{
		{"no URL", Options{NodeName: "n"}},
		{"relative URL", Options{URL: "/pods", NodeName: "n"}},
		{"not http", Options{URL: "ftp://127.0.0.1/pods", NodeName: "n"}},
		{"no node", Options{URL: "http://127.0.0.1/pods"}},
		{"negative timeout", Options{URL: "http://127.0.0.1/pods", NodeName: "n", Timeout: -1}},
		{"invalid node name", Options{URL: "http://127.0.0.1/pods", NodeName: "Node_1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.opts); err == nil {
				t.Fatal("New succeeded")
			}
		})
	}
}
