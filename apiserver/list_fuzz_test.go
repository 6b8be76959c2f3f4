package apiserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"testing"
	"time"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite/registry"
	"github.com/kite-project/kite/registry/builtin"
)

// FuzzListRequest sends list and watch queries (resourceVersion and
// resourceVersionMatch, continue tokens, limits, label and field selectors,
// watch options) to every resource Kite serves, as a GET or as a dry-run
// delete of the collection. Every answer is 200 (a list of the resource's
// kind, or a watch stream), a 4xx Status, or 504 Timeout (a
// resourceVersion the server has not reached, as upstream answers it; the
// query is bounded by timeout=1s); and nothing changes: the resource's list
// is the same after.
func FuzzListRequest(f *testing.F) {
	served := builtin.All(nil)
	for i := range served {
		f.Add(byte(i), false, "labelSelector=app%3Dweb&limit=1")
	}
	f.Add(byte(0), true, "fieldSelector=spec.nodeName%3Dnode1&labelSelector=app+in+(web)")
	c := newAPIClient(f)
	c.ensureFixtures(f, encoders(f))
	f.Fuzz(func(t *testing.T, resource byte, deleteDryRun bool, query string) {
		s := served[int(resource)%len(served)]
		method, prefix := http.MethodGet, "timeout=1s&"
		if deleteDryRun {
			// dryRun=All first: a query adding other values is refused.
			method, prefix = http.MethodDelete, "timeout=1s&dryRun=All&"
		}
		path := collection(s) + "?" + prefix + query
		what := fmt.Sprintf("%s %s", method, path)
		var before map[string]string
		lists := registry.Serves(s.Verbs(), "list")
		if lists {
			before = c.snapshot(t, s)
		}
		code, contentType, out := c.list(t, method, path)
		switch {
		case code == http.StatusOK && contentType == "watch":
		case code == http.StatusOK:
			var list metav1.PartialObjectMetadataList
			if err := json.Unmarshal(out, &list); err != nil {
				t.Fatalf("%s: 200 with a body that is not a list (%v): %s", what, err, out)
			}
			wantKind, wantAPIVersion := s.Kind.Kind+"List", s.Kind.GroupVersion().String()
			if list.Kind != wantKind || list.APIVersion != wantAPIVersion {
				t.Fatalf("%s: 200 with %s %s, want %s %s", what, list.APIVersion, list.Kind, wantAPIVersion, wantKind)
			}
		case code == http.StatusGatewayTimeout:
			var st metav1.Status
			if err := json.Unmarshal(out, &st); err != nil || st.Reason != metav1.StatusReasonTimeout {
				t.Fatalf("%s: 504 that is not a Timeout Status (%v): %s", what, err, out)
			}
		default:
			requireStatus(t, what, code, out)
		}
		if !lists {
			return
		}
		if after := c.snapshot(t, s); !reflect.DeepEqual(before, after) {
			t.Fatalf("%s (%d) changed the list:\nbefore %v\nafter  %v", what, code, before, after)
		}
	})
}

// list sends a list or watch request. A watch's stream is closed once its
// headers have come (the server must cope with clients that go away), and
// reported with contentType "watch". Whether it is a watch is decided as
// the server decides it, from the query's options.
func (c *apiClient) list(t *testing.T, method, path string) (code int, contentType string, body []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, nil)
	if err != nil {
		// The fuzzer's query is not one net/http can send: nothing to test.
		t.Skip(err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var opts metainternalversion.ListOptions
	isWatch := metainternalversionscheme.ParameterCodec.DecodeParameters(req.URL.Query(), metav1.SchemeGroupVersion, &opts) == nil && opts.Watch
	if resp.StatusCode == http.StatusOK && method == http.MethodGet && isWatch {
		return resp.StatusCode, "watch", nil
	}
	body, err = io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read response: %v", method, path, err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), body
}
