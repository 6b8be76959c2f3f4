package apiserver

import (
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
)

// requireClientError fails unless err is an API Status with a 4xx code.
func requireClientError(t *testing.T, what string, err error) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("%s: error is not an API Status: %v", what, err)
	}
	if code := status.Status().Code; code < 400 || code > 499 {
		t.Fatalf("%s: status code %d, want 4xx: %v", what, code, err)
	}
}

// listRequest is a list (or, by query, watch) of pods, of one pod when
// name is set.
func listRequest(query, name string) *call {
	r := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/api/v1/namespaces/ns/pods", RawQuery: query}, Header: http.Header{}}
	return &call{r: r, info: requestInfo{Namespace: "ns", Resource: "pods", Name: name}}
}

// FuzzListOptions parses list and watch queries (resourceVersion and
// resourceVersionMatch, continue, limit, label and field selectors, watch,
// bookmarks, sendInitialEvents, timeoutSeconds) as a list of a collection
// or of one named object. A refused query is a 4xx Status; an accepted
// one, encoded back into a query, parses to the same options.
func FuzzListOptions(f *testing.F) {
	f.Add("labelSelector=app%3Dweb&fieldSelector=spec.nodeName%3Dn1&limit=10", false)
	f.Fuzz(func(t *testing.T, query string, named bool) {
		name := ""
		if named {
			name = "web"
		}
		opts, err := listOptions(listRequest(query, name))
		if err != nil {
			requireClientError(t, "list query "+query, err)
			return
		}
		encoded, err := metainternalversionscheme.ParameterCodec.EncodeParameters(opts, metav1.SchemeGroupVersion)
		if err != nil {
			t.Fatalf("encode options of %q: %v", query, err)
		}
		again, err := listOptions(listRequest(encoded.Encode(), name))
		if err != nil {
			t.Fatalf("query %q encoded back as %q is refused: %v", query, encoded.Encode(), err)
		}
		if a, b := comparableListOptions(t, opts), comparableListOptions(t, again); !reflect.DeepEqual(a, b) {
			t.Fatalf("query %q encoded back as %q parses differently:\n%+v\n%+v", query, encoded.Encode(), a, b)
		}
	})
}

// comparableOptions has the selectors in canonical form (printed, parsed
// and printed again: parsing sorts the terms), which is what selectors
// equal by.
type comparableOptions struct {
	Labels, Fields string
	Rest           metainternalversion.ListOptions
}

func comparableListOptions(t *testing.T, o *metainternalversion.ListOptions) comparableOptions {
	t.Helper()
	c := comparableOptions{Rest: *o}
	if o.LabelSelector != nil {
		sel, err := labels.Parse(o.LabelSelector.String())
		if err != nil {
			t.Fatalf("label selector %q does not parse: %v", o.LabelSelector, err)
		}
		c.Labels = sel.String()
	}
	if o.FieldSelector != nil {
		sel, err := fields.ParseSelector(o.FieldSelector.String())
		if err != nil {
			t.Fatalf("field selector %q does not parse: %v", o.FieldSelector, err)
		}
		c.Fields = sel.String()
	}
	c.Rest.LabelSelector, c.Rest.FieldSelector = nil, nil
	return c
}

// fuzzServer is a Server with the codecs and limits that request parsing
// needs, and no stores.
func fuzzServer(f *testing.F) *Server {
	scheme, err := NewScheme()
	if err != nil {
		f.Fatal(err)
	}
	return &Server{scheme: scheme, codecs: serializer.NewCodecFactory(scheme), maxBody: DefaultMaxRequestBodyBytes}
}

// bodyMediaTypes are the request body types tried, by index.
var bodyMediaTypes = []string{mediaJSON, "application/yaml", mediaProtobuf, "", "application/json; charset=utf-8", "text/plain"}

func mediaTypeAt(i byte) string { return bodyMediaTypes[int(i)%len(bodyMediaTypes)] }

func deleteRequest(contentType string, body []byte, query string) *call {
	r := &http.Request{
		Method: http.MethodDelete,
		URL:    &url.URL{Path: "/api/v1/namespaces/ns/configmaps/c", RawQuery: query},
		Header: http.Header{},
	}
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	if body != nil {
		r.Body = http.NoBody
		if len(body) > 0 {
			r.Body = readCloser{bytes.NewReader(body)}
			r.ContentLength = int64(len(body))
		}
	}
	return &call{r: r, info: requestInfo{Namespace: "ns", Resource: "configmaps", Name: "c"}}
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// FuzzDeleteOptions parses DeleteOptions from a body (JSON, YAML or
// protobuf) or, without one, from the query. A refused one is a 4xx
// Status; an accepted one, written as a JSON body, parses to the same
// options.
func FuzzDeleteOptions(f *testing.F) {
	s := fuzzServer(f)
	grace := int64(0)
	uid := types.UID("0d0c1d38-6e2b-4c4f-9bd5-4b0c5e1c9c01")
	rv := "42"
	foreground := metav1.DeletePropagationForeground
	for _, opts := range []*metav1.DeleteOptions{
		{},
		{GracePeriodSeconds: &grace, PropagationPolicy: &foreground, DryRun: []string{metav1.DryRunAll}},
		{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}},
	} {
		opts.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("DeleteOptions"))
		for i := range 3 {
			f.Add(byte(i), encodeAs(f, s, mediaTypeAt(byte(i)), opts), "")
		}
	}
	f.Add(byte(3), []byte(nil), "gracePeriodSeconds=30&propagationPolicy=Background&dryRun=All")
	f.Fuzz(func(t *testing.T, mediaType byte, body []byte, query string) {
		ct := mediaTypeAt(mediaType)
		opts, err := s.deleteOptions(deleteRequest(ct, body, query))
		if err != nil {
			requireClientError(t, "delete options", err)
			return
		}
		opts.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("DeleteOptions"))
		written := encodeAs(t, s, mediaJSON, opts)
		again, err := s.deleteOptions(deleteRequest(mediaJSON, written, ""))
		if err != nil {
			t.Fatalf("options %s written back are refused: %v", written, err)
		}
		again.SetGroupVersionKind(opts.GroupVersionKind())
		if !reflect.DeepEqual(again, opts) {
			t.Fatalf("options written back as %s parse as %+v, want %+v", written, again, opts)
		}
	})
}

// encodeAs encodes obj in a request body media type.
func encodeAs(tb testing.TB, s *Server, mediaType string, obj runtime.Object) []byte {
	tb.Helper()
	info, ok := s.serializerFor(mediaType)
	if !ok {
		tb.Fatalf("no serializer for %s", mediaType)
	}
	var buf bytes.Buffer
	if err := info.Serializer.Encode(obj, &buf); err != nil {
		tb.Fatalf("encode %T as %s: %v", obj, mediaType, err)
	}
	return buf.Bytes()
}
