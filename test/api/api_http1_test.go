package api_test

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Clients that turn HTTP/2 off (client-go honours DISABLE_HTTP2) talk
// HTTP/1.1: one connection per watch, chunked responses. Their events go
// through the same batched connection writes as HTTP/2's and must arrive,
// alone and in a burst.
func TestHTTP11ClientsListAndWatch(t *testing.T) {
	cfg := config(t)
	cfg.TLSClientConfig.NextProtos = []string{"http/1.1"}
	var responses, http1 atomic.Int32
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if err == nil {
				responses.Add(1)
				if resp.ProtoMajor == 1 {
					http1.Add(1)
				}
			}
			return resp, err
		})
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := contextWithTimeout(t, 30*time.Second)
	defer cancel()
	ns := newNamespace(t, client)
	pods := client.CoreV1().Pods(ns)

	w, err := pods.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	next := func() *v1.Pod {
		t.Helper()
		select {
		case ev, ok := <-w.ResultChan():
			if !ok || ev.Type != watch.Added {
				t.Fatalf("watch event %v (open %v), want ADDED", ev.Type, ok)
			}
			return ev.Object.(*v1.Pod)
		case <-time.After(10 * time.Second):
			t.Fatal("no watch event within 10s")
			return nil
		}
	}

	if _, err := pods.Create(ctx, testPod("alone"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := next(); got.Name != "alone" {
		t.Fatalf("first event is for %q, want alone", got.Name)
	}
	const burst = 50
	for i := range burst {
		if _, err := pods.Create(ctx, testPod(fmt.Sprintf("burst-%02d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range burst {
		if got, want := next().Name, fmt.Sprintf("burst-%02d", i); got != want {
			t.Fatalf("event %d is for %q, want %q", i, got, want)
		}
	}
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != burst+1 {
		t.Fatalf("list has %d pods, want %d", len(list.Items), burst+1)
	}
	if n, h1 := responses.Load(), http1.Load(); n == 0 || h1 != n {
		t.Fatalf("%d of %d responses came over HTTP/1.x", h1, n)
	}
}
