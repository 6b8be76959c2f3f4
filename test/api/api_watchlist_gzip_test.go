package api_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// A streaming list (sendInitialEvents with bookmarks) is gzipped for a
// client that accepts gzip, as kube-apiserver 1.37 does
// (WatchListCompression); other watches, and clients without gzip, get
// plain frames.
func TestStreamingListIsGzippedAsUpstream(t *testing.T) {
	cfg := config(t)
	client := kubernetes.NewForConfigOrDie(cfg)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const watchList = "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
	cases := []struct {
		name     string
		query    string
		encoding string
		gzipped  bool
	}{
		{"streaming list, gzip accepted", watchList, "gzip", true},
		{"streaming list, gzip among others", watchList, "br, gzip", true},
		// Upstream matches the token exactly, parameters and all.
		{"streaming list, gzip with a q-value", watchList, "gzip;q=0.5", false},
		{"streaming list, no gzip", watchList, "", false},
		// A watch from "" with bookmarks is defaulted to a streaming list
		// (SetListOptionsDefaults), upstream's and Kite's.
		{"legacy watch with bookmarks, gzip accepted", "?watch=1&allowWatchBookmarks=true", "gzip", true},
		{"watch without bookmarks, gzip accepted", "?watch=1", "gzip", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t, client)
			if _, err := client.CoreV1().Pods(ns).Create(t.Context(), testPod("first"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, shared.URL()+"/api/v1/namespaces/"+ns+"/pods"+tc.query, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.encoding != "" {
				// Set by hand, the transport leaves the body as sent.
				req.Header.Set("Accept-Encoding", tc.encoding)
			} else {
				req.Header.Set("Accept-Encoding", "identity")
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if got := resp.Header.Get("Content-Encoding") == "gzip"; got != tc.gzipped {
				t.Fatalf("Content-Encoding %q, want gzip: %v", resp.Header.Get("Content-Encoding"), tc.gzipped)
			}
			var body io.Reader = resp.Body
			if tc.gzipped {
				zr, err := gzip.NewReader(resp.Body)
				if err != nil {
					t.Fatalf("gzip header: %v", err)
				}
				body = zr
			}
			events := make(chan string)
			go func() {
				defer close(events)
				sc := bufio.NewScanner(body)
				sc.Buffer(nil, 1<<20)
				for sc.Scan() {
					var ev struct {
						Type   string
						Object metav1.PartialObjectMetadata
					}
					if json.Unmarshal(sc.Bytes(), &ev) != nil {
						return
					}
					select {
					case events <- ev.Type + " " + ev.Object.Name:
					case <-ctx.Done():
						return
					}
				}
			}()
			next := func(want string) {
				t.Helper()
				select {
				case got, ok := <-events:
					if !ok || !strings.HasPrefix(got, want) {
						t.Fatalf("next event %q (stream open: %v), want %q", got, ok, want)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("no event %q within 10 s", want)
				}
			}
			next("ADDED first")
			if strings.Contains(tc.query, "allowWatchBookmarks=true") {
				next("BOOKMARK")
			}
			// A live event must arrive on its own, not held back until
			// a later one (the gzip member of each flush must end in a
			// flush marker).
			if _, err := client.CoreV1().Pods(ns).Create(t.Context(), testPod("live"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			next("ADDED live")
		})
	}
}
