package apiserver_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite/apiserver"
	"github.com/kite-project/kite/registry"
	"github.com/kite-project/kite/registry/builtin"
)

// bodyMediaTypes are the request body encodings the body target sends.
var bodyMediaTypes = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}

// apiClient sends raw requests to the shared server as its admin.
type apiClient struct {
	hc   *http.Client
	base string
}

func newAPIClient(tb testing.TB) *apiClient {
	hc, err := rest.HTTPClientFor(shared.RESTConfig())
	if err != nil {
		tb.Fatal(err)
	}
	// Every request but a watch ends within the server's 60 s; a hung one
	// fails the input instead of stalling the fuzzer.
	hc.Timeout = 20 * time.Second
	return &apiClient{hc: hc, base: shared.URL()}
}

// do sends a request with a body of contentType (none when body is nil)
// and returns the status code and the JSON response body.
func (c *apiClient) do(tb testing.TB, method, path, contentType string, body []byte) (int, []byte) {
	tb.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("%s %s: read response: %v", method, path, err)
	}
	return resp.StatusCode, out
}

// requireStatus fails unless out is a metav1.Status saying code, a 4xx.
func requireStatus(t *testing.T, what string, code int, out []byte) {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(out, &st); err != nil || st.Kind != "Status" || int(st.Code) != code {
		t.Fatalf("%s: %d with a body that is not its Status (%v): %s", what, code, err, out)
	}
	if code < 400 || code > 499 {
		t.Fatalf("%s: %d %s: %s, want a 4xx", what, code, st.Reason, st.Message)
	}
}

// collection is the path of a strategy's resource (in fuzzNamespace when
// namespaced).
func collection(s *registry.Strategy) string {
	gv := s.Kind.GroupVersion()
	p := "/apis/" + gv.String()
	if gv.Group == "" {
		p = "/api/" + gv.Version
	}
	if s.Namespaced {
		p += "/namespaces/" + fuzzNamespace
	}
	return p + "/" + s.Resource
}

// snapshot is what a list of a resource holds: resourceVersion by name.
func (c *apiClient) snapshot(t *testing.T, s *registry.Strategy) map[string]string {
	t.Helper()
	code, out := c.do(t, http.MethodGet, collection(s), "", nil)
	var list struct {
		Items []metav1.PartialObjectMetadata `json:"items"`
	}
	if err := json.Unmarshal(out, &list); code != http.StatusOK || err != nil {
		t.Fatalf("list %s: %d %v: %s", s.Resource, code, err, out)
	}
	rvs := make(map[string]string, len(list.Items))
	for _, item := range list.Items {
		rvs[item.Name] = item.ResourceVersion
	}
	return rvs
}

// remove deletes an object the target created, clearing its finalizers
// and skipping the grace period, and waits until it is gone (a namespace
// is purged by the namespace deleter), so that the next input starts from
// the same state.
func (c *apiClient) remove(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		code, out := c.do(t, http.MethodGet, path, "", nil)
		if code == http.StatusNotFound {
			return
		}
		var obj map[string]any
		if err := json.Unmarshal(out, &obj); code != http.StatusOK || err != nil {
			t.Fatalf("get %s to remove it: %d %v: %s", path, code, err, out)
		}
		if m, _ := obj["metadata"].(map[string]any); m["finalizers"] != nil {
			delete(m, "finalizers")
			body, _ := json.Marshal(obj)
			c.do(t, http.MethodPut, path, "application/json", body)
		}
		c.do(t, http.MethodDelete, path+"?gracePeriodSeconds=0", "", nil)
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s is still there after 30 s", path)
}

// ensureFixtures creates fuzzNamespace and an object named "fixture" of
// every stored resource, for the updates to aim at.
func (c *apiClient) ensureFixtures(tb testing.TB, enc map[string]runtime.Encoder) {
	ns := sample(builtin.Namespaces(nil).Kind, fuzzNamespace)
	create := func(s *registry.Strategy, obj runtime.Object) {
		code, out := c.do(tb, http.MethodPost, collection(s), "application/json", encode(tb, enc["application/json"], obj))
		if code != http.StatusCreated && code != http.StatusConflict {
			tb.Fatalf("create fixture %s: %d: %s", s.Resource, code, out)
		}
	}
	create(builtin.Namespaces(nil), ns)
	for _, s := range builtin.All(nil) {
		if s.Stored() {
			create(s, sample(s.Kind, "fixture"))
		}
	}
}

// bodyTargets are the resources whose create takes a body of their own
// kind: the stored ones and the virtual reviews; not componentstatuses
// (get and list only) nor bindings, whose create binds a pod (a write of
// another resource, which pods/binding's own tests cover).
func bodyTargets() []*registry.Strategy {
	var out []*registry.Strategy
	for _, s := range builtin.All(nil) {
		if s.Stored() || s.Virtual != nil {
			out = append(out, s)
		}
	}
	return out
}

func encoders(tb testing.TB) map[string]runtime.Encoder {
	scheme, err := apiserver.NewScheme()
	if err != nil {
		tb.Fatal(err)
	}
	codecs := serializer.NewCodecFactory(scheme)
	enc := map[string]runtime.Encoder{}
	for _, mt := range bodyMediaTypes {
		info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mt)
		if !ok {
			tb.Fatalf("no serializer for %s", mt)
		}
		enc[mt] = info.Serializer
	}
	return enc
}

func encode(tb testing.TB, enc runtime.Encoder, obj runtime.Object) []byte {
	var buf bytes.Buffer
	if err := enc.Encode(obj, &buf); err != nil {
		tb.Fatalf("encode %T: %v", obj, err)
	}
	return buf.Bytes()
}

// TestEveryServedKindHasASample keeps the body target's seeds complete
// and valid: every resource Kite serves has a sample object, which the
// server creates from its JSON, YAML and protobuf encodings.
func TestEveryServedKindHasASample(t *testing.T) {
	enc := encoders(t)
	c := newAPIClient(t)
	c.ensureFixtures(t, enc)
	for _, s := range bodyTargets() {
		for m, mt := range bodyMediaTypes {
			obj := sample(s.Kind, fmt.Sprintf("sample-%d", m))
			if obj == nil {
				t.Fatalf("no sample object of %s (%s)", s.Kind, s.Resource)
			}
			code, out := c.do(t, http.MethodPost, collection(s), mt, encode(t, enc[mt], obj))
			if code != http.StatusCreated {
				t.Errorf("create sample %s as %s: %d: %s", s.Kind, mt, code, out)
			}
			if s.Virtual == nil {
				c.remove(t, collection(s)+"/"+fmt.Sprintf("sample-%d", m))
			}
		}
	}
}

// serverWritesStatus are the resources whose status the server writes
// on its own as soon as an object is created: a FlowSchema gets its
// Dangling condition from priority and fairness (docs/flowcontrol.md).
var serverWritesStatus = map[string]bool{"flowschemas": true}

// withoutServerStatus drops from a decoded object what the server's own
// status write changes: the status, the resourceVersion, managedFields.
func withoutServerStatus(obj map[string]any) {
	delete(obj, "status")
	if m, ok := obj["metadata"].(map[string]any); ok {
		delete(m, "resourceVersion")
		delete(m, "managedFields")
	}
}

// FuzzRequestBody sends create (POST) and update (PUT of the object named
// "fixture") bodies in JSON, YAML and protobuf to every resource Kite
// serves. A refused body gets a 4xx metav1.Status and changes nothing (the
// resource's list, names and resourceVersions, is the same after); an
// accepted one is answered with the object, which reads back equal. What
// a create made is deleted again.
func FuzzRequestBody(f *testing.F) {
	served := bodyTargets()
	enc := encoders(f)
	for i, s := range served {
		for m, mt := range bodyMediaTypes {
			f.Add(byte(i), byte(m), false, encode(f, enc[mt], sample(s.Kind, fmt.Sprintf("seed-%d", m))))
			if s.Virtual == nil {
				f.Add(byte(i), byte(m), true, encode(f, enc[mt], sample(s.Kind, "fixture")))
			}
		}
	}
	c := newAPIClient(f)
	c.ensureFixtures(f, enc)
	f.Fuzz(func(t *testing.T, resource, mediaType byte, update bool, body []byte) {
		s := served[int(resource)%len(served)]
		ct := bodyMediaTypes[int(mediaType)%len(bodyMediaTypes)]
		method, path := http.MethodPost, collection(s)
		if update && s.Virtual == nil {
			method, path = http.MethodPut, path+"/fixture"
		}
		what := fmt.Sprintf("%s %s (%s)", method, path, ct)
		var before map[string]string
		if s.Virtual == nil {
			before = c.snapshot(t, s)
		}
		code, out := c.do(t, method, path, ct, body)
		switch {
		case code >= 200 && code <= 299:
			var got metav1.PartialObjectMetadata
			if err := json.Unmarshal(out, &got); err != nil || got.Kind != s.Kind.Kind || got.APIVersion != s.Kind.GroupVersion().String() {
				t.Fatalf("%s: %d with %s %s (%v), want a %s: %s", what, code, got.APIVersion, got.Kind, err, s.Kind, out)
			}
			if s.Virtual != nil {
				return
			}
			objPath := collection(s) + "/" + got.Name
			if code == http.StatusCreated {
				defer c.remove(t, objPath)
			}
			readCode, read := c.do(t, http.MethodGet, objPath, "", nil)
			var want, back map[string]any
			if err := json.Unmarshal(out, &want); err != nil {
				t.Fatal(err)
			}
			err := json.Unmarshal(read, &back)
			if serverWritesStatus[s.Resource] && err == nil {
				withoutServerStatus(want)
				withoutServerStatus(back)
			}
			if readCode != http.StatusOK || err != nil || !reflect.DeepEqual(want, back) {
				t.Fatalf("%s: answered\n%s\nbut reads back (%d)\n%s", what, out, readCode, read)
			}
		case code >= 400 && code <= 499:
			requireStatus(t, what, code, out)
			if s.Virtual == nil {
				if after := c.snapshot(t, s); !reflect.DeepEqual(before, after) {
					t.Fatalf("%s refused with %d changed the list:\nbefore %v\nafter  %v", what, code, before, after)
				}
			}
		default:
			t.Fatalf("%s: %d: %s", what, code, out)
		}
	})
}
