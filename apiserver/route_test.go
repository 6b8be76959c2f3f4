package apiserver

import (
	"net/http/httptest"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestParsePathSplitsAPIPaths(t *testing.T) {
	core := schema.GroupVersion{Version: "v1"}
	leases := schema.GroupVersion{Group: "coordination.k8s.io", Version: "v1"}
	tests := []struct {
		path    string
		want    requestInfo
		wantErr bool
	}{
		{path: "/api/v1", want: requestInfo{GroupVersion: core}},
		{path: "/api/v1/pods", want: requestInfo{GroupVersion: core, Resource: "pods"}},
		{path: "/api/v1/namespaces/ns1/pods", want: requestInfo{GroupVersion: core, Namespace: "ns1", Resource: "pods"}},
		{path: "/api/v1/namespaces/ns1/pods/p", want: requestInfo{GroupVersion: core, Namespace: "ns1", Resource: "pods", Name: "p"}},
		{path: "/api/v1/namespaces/ns1/pods/p/status", want: requestInfo{GroupVersion: core, Namespace: "ns1", Resource: "pods", Name: "p", Subresource: "status"}},
		{path: "/api/v1/namespaces", want: requestInfo{GroupVersion: core, Resource: "namespaces"}},
		{path: "/api/v1/namespaces/ns1", want: requestInfo{GroupVersion: core, Resource: "namespaces", Name: "ns1"}},
		{path: "/api/v1/namespaces/ns1/status", want: requestInfo{GroupVersion: core, Resource: "namespaces", Name: "ns1", Subresource: "status"}},
		{path: "/api/v1/namespaces/ns1/finalize", want: requestInfo{GroupVersion: core, Resource: "namespaces", Name: "ns1", Subresource: "finalize"}},
		{path: "/api/v1/watch/namespaces/ns1/pods", want: requestInfo{GroupVersion: core, Namespace: "ns1", Resource: "pods", Watch: true}},
		{path: "/api/v1/nodes/n1/status", want: requestInfo{GroupVersion: core, Resource: "nodes", Name: "n1", Subresource: "status"}},
		{path: "/apis/coordination.k8s.io", want: requestInfo{GroupVersion: schema.GroupVersion{Group: "coordination.k8s.io"}, GroupOnly: true}},
		{path: "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", want: requestInfo{GroupVersion: leases, Namespace: "kube-node-lease", Resource: "leases", Name: "n1"}},
		{path: "/api/v1/namespaces/ns1/pods/p/status/extra", wantErr: true},
		{path: "/api/v1/namespaces/ns1/pods/p/proxy", want: requestInfo{GroupVersion: core, Namespace: "ns1", Resource: "pods", Name: "p", Subresource: "proxy"}},
		{path: "/api/v1/namespaces/ns1/pods/p/proxy/", want: requestInfo{GroupVersion: core, Namespace: "ns1", Resource: "pods", Name: "p", Subresource: "proxy", ProxyPath: "/"}},
		{path: "/api/v1/namespaces/ns1/pods/https:p:443/proxy/a/b", want: requestInfo{GroupVersion: core, Namespace: "ns1", Resource: "pods", Name: "https:p:443", Subresource: "proxy", ProxyPath: "/a/b"}},
		{path: "/api/v1/namespaces/ns1/services/s/proxy/a/b/", want: requestInfo{GroupVersion: core, Namespace: "ns1", Resource: "services", Name: "s", Subresource: "proxy", ProxyPath: "/a/b/"}},
		{path: "/api/v1/nodes/n1/proxy/logs/", want: requestInfo{GroupVersion: core, Resource: "nodes", Name: "n1", Subresource: "proxy", ProxyPath: "/logs/"}},
		{path: "/other", wantErr: true},
		{path: "/api", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := parsePath(tt.path)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestVerbFollowsMethodAndShape(t *testing.T) {
	tests := []struct {
		method, url string
		info        requestInfo
		want        string
	}{
		{"GET", "/x", requestInfo{Resource: "pods"}, "list"},
		{"GET", "/x?watch=true", requestInfo{Resource: "pods"}, "watch"},
		{"GET", "/x?watch=1", requestInfo{Resource: "pods", Name: "p"}, "watch"},
		{"GET", "/x", requestInfo{Resource: "pods", Watch: true}, "watch"},
		{"GET", "/x", requestInfo{Resource: "pods", Name: "p"}, "get"},
		{"POST", "/x", requestInfo{Resource: "pods"}, "create"},
		{"PUT", "/x", requestInfo{Resource: "pods", Name: "p"}, "update"},
		{"PATCH", "/x", requestInfo{Resource: "pods", Name: "p"}, "patch"},
		{"DELETE", "/x", requestInfo{Resource: "pods", Name: "p"}, "delete"},
		{"DELETE", "/x", requestInfo{Resource: "pods"}, "deletecollection"},
		{"OPTIONS", "/x", requestInfo{Resource: "pods"}, ""},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(tt.method, tt.url, nil)
		if got := verb(r, tt.info); got != tt.want {
			t.Errorf("%s %s %+v: got %q, want %q", tt.method, tt.url, tt.info, got, tt.want)
		}
	}
}
