package controllers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// TestTypedConfigSpeaksProtobufAsKubeControllerManager: the controllers'
// typed clients send and accept protobuf, with JSON accepted as the
// fallback, unless the configuration chose otherwise.
func TestTypedConfigSpeaksProtobufAsKubeControllerManager(t *testing.T) {
	for _, tc := range []struct {
		name                        string
		contentType, accept         string
		wantContentType, wantAccept string
	}{
		{name: "default", wantContentType: mediaProtobuf, wantAccept: mediaProtobuf + "," + mediaJSON},
		{name: "JSON asked for by default", contentType: mediaJSON, wantContentType: mediaProtobuf, wantAccept: mediaProtobuf + "," + mediaJSON},
		{name: "explicit accept kept", accept: mediaJSON, wantContentType: mediaProtobuf, wantAccept: mediaJSON},
		{name: "other content type kept", contentType: "application/cbor", wantContentType: "application/cbor", wantAccept: "application/cbor," + mediaJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &rest.Config{Host: "https://127.0.0.1:1", ContentConfig: rest.ContentConfig{ContentType: tc.contentType, AcceptContentTypes: tc.accept}}
			got := TypedConfig(in)
			if got.ContentType != tc.wantContentType || got.AcceptContentTypes != tc.wantAccept {
				t.Errorf("TypedConfig: content type %q, accept %q; want %q, %q", got.ContentType, got.AcceptContentTypes, tc.wantContentType, tc.wantAccept)
			}
			if in.ContentType != tc.contentType || in.AcceptContentTypes != tc.accept {
				t.Errorf("TypedConfig changed its input: %q, %q", in.ContentType, in.AcceptContentTypes)
			}
		})
	}
}

// TestTypedClientAsksForProtobuf: what the typed client sends on the
// wire, seen by a real HTTP server.
func TestTypedClientAsksForProtobuf(t *testing.T) {
	var mu sync.Mutex
	var accept []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		accept = append(accept, r.Header.Get("Accept"))
		mu.Unlock()
		w.Header().Set("Content-Type", mediaJSON)
		_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}`))
	}))
	defer srv.Close()
	c, err := typedClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatalf("list pods (JSON answer to a protobuf-first accept): %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(accept) != 1 || !strings.HasPrefix(accept[0], mediaProtobuf) {
		t.Fatalf("Accept headers %q, want one starting with %s", accept, mediaProtobuf)
	}
}
