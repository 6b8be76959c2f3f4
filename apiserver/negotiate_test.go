package apiserver

import (
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

func testServer(t *testing.T) *Server {
	t.Helper()
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	return &Server{
		scheme: scheme,
		codecs: serializer.NewCodecFactory(scheme),
		opts: Options{Tables: func(runtime.Object, metav1.IncludeObjectPolicy, bool, schema.GroupVersion) (*metav1.Table, error) {
			return nil, nil
		}},
	}
}

func TestNegotiatePicksTheFirstAcceptableForm(t *testing.T) {
	s := testServer(t)
	all := negotiation{table: true, discovery: true, partial: "PartialObjectMetadataList"}
	tests := []struct {
		name      string
		accept    string
		allow     negotiation
		mediaType string
		table     bool
		discovery bool
		partial   string
		code      int32
	}{
		{name: "none means JSON", accept: "", allow: all, mediaType: "application/json"},
		{name: "wildcard", accept: "*/*", allow: all, mediaType: "application/json"},
		{name: "protobuf", accept: "application/vnd.kubernetes.protobuf, application/json", allow: all, mediaType: "application/vnd.kubernetes.protobuf"},
		{name: "yaml", accept: "application/yaml", allow: all, mediaType: "application/yaml"},
		{name: "kubectl get asks for a Table", accept: "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json", allow: all, mediaType: "application/json", table: true},
		{name: "Table where none is offered falls back", accept: "application/json;as=Table;v=v1;g=meta.k8s.io,application/json", allow: negotiation{}, mediaType: "application/json"},
		{name: "aggregated discovery", accept: "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json", allow: all, mediaType: "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", discovery: true},
		{name: "old discovery version falls back", accept: "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json", allow: all, mediaType: "application/json"},
		{name: "metadata only", accept: "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json", allow: all, mediaType: "application/vnd.kubernetes.protobuf", partial: "PartialObjectMetadataList"},
		{name: "quality orders", accept: "application/json;q=0.5, application/yaml", allow: all, mediaType: "application/yaml"},
		{name: "nothing acceptable", accept: "text/html", allow: all, code: 406},
		{name: "only an unoffered form", accept: "application/json;as=Table;v=v1;g=meta.k8s.io", allow: negotiation{}, code: 406},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api/v1/pods", nil)
			if tt.accept != "" {
				r.Header.Set("Accept", tt.accept)
			}
			out, err := s.negotiate(r, tt.allow)
			if tt.code != 0 {
				if st := toStatus(err); err == nil || st.Code != tt.code {
					t.Fatalf("got %v, want %d", err, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out.mediaType != tt.mediaType || (out.table != nil) != tt.table || out.discovery != tt.discovery || out.partial != tt.partial {
				t.Errorf("got %q table=%v discovery=%v partial=%q", out.mediaType, out.table != nil, out.discovery, out.partial)
			}
		})
	}
}

func TestBodySerializerRefusesUnknownTypes(t *testing.T) {
	s := testServer(t)
	for ct, ok := range map[string]bool{
		"":                                    true,
		"application/json":                    true,
		"application/json; charset=utf-8":     true,
		"application/yaml":                    true,
		"application/vnd.kubernetes.protobuf": true,
		"text/plain":                          false,
		"application/xml":                     false,
	} {
		r := httptest.NewRequest("POST", "/api/v1/namespaces/a/pods", nil)
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		_, err := s.bodySerializer(r)
		if (err == nil) != ok {
			t.Errorf("Content-Type %q: err %v, want accepted=%v", ct, err, ok)
		} else if err != nil && toStatus(err).Code != 415 {
			t.Errorf("Content-Type %q: code %d, want 415", ct, toStatus(err).Code)
		}
	}
}
