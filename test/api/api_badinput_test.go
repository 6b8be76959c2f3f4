package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// raw sends one request with the admin credentials and returns the status
// code and the decoded Status body (if the body is one).
func raw(t *testing.T, method, path, contentType, accept string, body []byte) (int, metav1.Status, http.Header) {
	t.Helper()
	hc, err := rest.HTTPClientFor(config(t))
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, shared.URL()+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var st metav1.Status
	json.Unmarshal(data, &st)
	return resp.StatusCode, st, resp.Header
}

func TestBadInputGetsUpstreamStatus(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := newNamespace(t, client)
	pods := "/api/v1/namespaces/" + ns + "/pods"
	podJSON := func(spec string) []byte {
		return []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":` + spec + `}`)
	}
	huge := podJSON(`{"containers":[{"name":"c","image":"` + strings.Repeat("x", 4<<20) + `"}]}`)
	tests := []struct {
		name        string
		method      string
		path        string
		contentType string
		accept      string
		body        []byte
		code        int
		reason      metav1.StatusReason
		causeField  string
	}{
		{name: "malformed JSON", method: "POST", path: pods, contentType: "application/json", body: []byte(`{"kind":"Pod",`), code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "wrong kind", method: "POST", path: pods, contentType: "application/json", body: []byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"}}`), code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "wrong API version", method: "POST", path: pods, contentType: "application/json", body: []byte(`{"apiVersion":"apps/v1","kind":"Pod","metadata":{"name":"s"}}`), code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "invalid object", method: "POST", path: pods, contentType: "application/json", body: podJSON(`{"containers":[]}`), code: 422, reason: metav1.StatusReasonInvalid, causeField: "spec.containers"},
		{name: "invalid name", method: "POST", path: pods, contentType: "application/json", body: []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"Bad_Name"},"spec":{"containers":[{"name":"c","image":"i"}]}}`), code: 422, reason: metav1.StatusReasonInvalid, causeField: "metadata.name"},
		{name: "body over 3 MiB", method: "POST", path: pods, contentType: "application/json", body: huge, code: 413, reason: metav1.StatusReasonRequestEntityTooLarge},
		{name: "bad label selector", method: "GET", path: pods + "?labelSelector=a+in+(", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "unsupported field selector", method: "GET", path: pods + "?fieldSelector=spec.foo%3Dx", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "unknown resource", method: "GET", path: "/api/v1/namespaces/" + ns + "/widgets", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "unknown group", method: "GET", path: "/apis/example.com/v1/widgets", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "unsupported media type", method: "POST", path: pods, contentType: "text/plain", body: []byte("hello"), code: 415, reason: metav1.StatusReasonUnsupportedMediaType},
		{name: "unsupported patch type", method: "PATCH", path: pods + "/p", contentType: "application/json", body: []byte("{}"), code: 415, reason: metav1.StatusReasonUnsupportedMediaType},
		{name: "not acceptable", method: "GET", path: pods, accept: "text/html", code: 406, reason: metav1.StatusReasonNotAcceptable},
		{name: "method not allowed", method: "PUT", path: pods, contentType: "application/json", body: podJSON(`{}`), code: 405, reason: metav1.StatusReasonMethodNotAllowed},
		{name: "strict field validation", method: "POST", path: pods + "?fieldValidation=Strict", contentType: "application/json", body: podJSON(`{"containers":[{"name":"c","image":"i"}],"bogus":1}`), code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "bad dryRun value", method: "POST", path: pods + "?dryRun=Some", contentType: "application/json", body: podJSON(`{"containers":[{"name":"c","image":"i"}]}`), code: 422, reason: metav1.StatusReasonInvalid},
		{name: "invalid resourceVersion", method: "GET", path: pods + "?resourceVersion=abc", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "get missing", method: "GET", path: pods + "/missing", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "bad timeout", method: "GET", path: pods + "?timeout=soon", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "timeout passes", method: "GET", path: pods + "?resourceVersion=999999999&resourceVersionMatch=NotOlderThan&timeout=1ms", code: 504, reason: metav1.StatusReasonTimeout},
		{name: "resourceVersion from the future", method: "GET", path: pods + "?resourceVersion=999999999&resourceVersionMatch=NotOlderThan", code: 504, reason: metav1.StatusReasonTimeout},
		{name: "continue with resourceVersion", method: "GET", path: pods + "?continue=abc&resourceVersion=5", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "sendInitialEvents without watch", method: "GET", path: pods + "?sendInitialEvents=true&resourceVersionMatch=NotOlderThan", code: 422, reason: metav1.StatusReasonInvalid},
		{name: "unknown propagationPolicy", method: "DELETE", path: pods + "/p", contentType: "application/json", body: []byte(`{"propagationPolicy":"Sideways"}`), code: 422, reason: metav1.StatusReasonInvalid, causeField: "propagationPolicy"},
		{name: "orphanDependents with propagationPolicy", method: "DELETE", path: pods + "/p", contentType: "application/json", body: []byte(`{"orphanDependents":true,"propagationPolicy":"Orphan"}`), code: 422, reason: metav1.StatusReasonInvalid, causeField: "propagationPolicy"},
		{name: "namespace mismatch", method: "POST", path: pods, contentType: "application/json", body: []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"other"},"spec":{"containers":[{"name":"c","image":"i"}]}}`), code: 400, reason: metav1.StatusReasonBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, st, _ := raw(t, tt.method, tt.path, tt.contentType, tt.accept, tt.body)
			if code != tt.code || st.Reason != tt.reason || st.Kind != "Status" {
				t.Fatalf("got %d %q (kind %q, message %q), want %d %q", code, st.Reason, st.Kind, st.Message, tt.code, tt.reason)
			}
			if tt.causeField != "" {
				found := false
				for _, c := range st.Details.Causes {
					found = found || strings.HasPrefix(c.Field, tt.causeField)
				}
				if !found {
					t.Errorf("causes %+v lack field %s", st.Details.Causes, tt.causeField)
				}
			}
		})
	}
	// Nothing above changed anything, and the server keeps serving.
	list, err := client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil || len(list.Items) != 0 {
		t.Fatalf("after bad input: %v, %d pods", err, len(list.Items))
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := newNamespace(t, client)
	pods := client.CoreV1().Pods(ns)
	dry := []string{metav1.DryRunAll}
	out, err := pods.Create(t.Context(), testPod("dry"), metav1.CreateOptions{DryRun: dry})
	if err != nil || out.UID == "" {
		t.Fatalf("dry-run create: %v (uid %q)", err, out.UID)
	}
	if _, err := pods.Get(t.Context(), "dry", metav1.GetOptions{}); err == nil {
		t.Fatalf("dry-run create stored the pod")
	}
	real, err := pods.Create(t.Context(), testPod("real"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Create(t.Context(), testPod("real"), metav1.CreateOptions{DryRun: dry}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("dry-run create of an existing pod: %v, want AlreadyExists", err)
	}
	real.Labels["dry"] = "yes"
	if _, err := pods.Update(t.Context(), real, metav1.UpdateOptions{DryRun: dry}); err != nil {
		t.Fatalf("dry-run update: %v", err)
	}
	if err := pods.Delete(t.Context(), "real", metav1.DeleteOptions{DryRun: dry}); err != nil {
		t.Fatalf("dry-run delete: %v", err)
	}
	got, err := pods.Get(t.Context(), "real", metav1.GetOptions{})
	if err != nil || got.Labels["dry"] != "" || got.ResourceVersion != real.ResourceVersion {
		t.Fatalf("dry-run update or delete changed the pod: %v %v", err, got.Labels)
	}
}
