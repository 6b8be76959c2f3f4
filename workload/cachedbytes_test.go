package workload_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite/workload"
)

// TestCustomResourcesAreWrittenFromCachedBytes checks the premise of the
// custom-resource comparison: a list from cache and a watch of custom
// resources are written from each object's cached bytes, as for built-in
// pods, not encoded per request. It counts the allocations of the whole
// process (the server is in it) per item of a JSON list at RV=0 and of a
// watch from RV=0 (which sends every object as ADDED from the cache), once
// every object's bytes were made: encoding an unstructured object of this
// size allocates over a hundred times, a cached one next to nothing.
func TestCustomResourcesAreWrittenFromCachedBytes(t *testing.T) {
	const n = 1000
	ctx := t.Context()
	cfg := shared.RESTConfig()
	client := kubernetes.NewForConfigOrDie(cfg)
	ns, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cached-bytes-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	remove, err := workload.SetUpComparison(ctx, cfg, ns.Name, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := remove(ctx); err != nil {
			t.Errorf("remove the CRD: %v", err)
		}
		if err := client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete namespace: %v", err)
		}
	})
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string, read func(io.Reader) error) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("GET %s: %s %s", path, resp.Status, b)
		}
		if err := read(resp.Body); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	list := func(path string) {
		get(path+"?resourceVersion=0", func(r io.Reader) error {
			_, err := io.Copy(io.Discard, r)
			return err
		})
	}
	// watch reads the n ADDED events of a watch from RV=0, one a line.
	watch := func(path string) {
		get(path+"?watch=1&resourceVersion=0", func(r io.Reader) error {
			sc := bufio.NewScanner(r)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for added := 0; added < n; {
				if !sc.Scan() {
					return fmt.Errorf("the watch ended after %d of %d ADDED events: %v", added, n, sc.Err())
				}
				if bytes.HasPrefix(sc.Bytes(), []byte(`{"type":"ADDED"`)) {
					added++
				}
			}
			return nil
		})
	}
	perItem := func(f func()) float64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return float64(after.Mallocs-before.Mallocs) / n
	}

	// Cached, a list item or a watch event is a few allocations at most
	// (the watch's: the client's line scanning and the server's frames);
	// encoded per request, one of these objects is over a hundred.
	const bound = 10
	type allocs struct{ list, watch float64 }
	got := map[string]allocs{}
	for _, kind := range []struct{ name, path string }{
		{"pods", "/api/v1/namespaces/" + ns.Name + "/pods"},
		{"custom resources", "/apis/bench.kite.io/v1/namespaces/" + ns.Name + "/benchpods"},
	} {
		// The first list makes every object's bytes (the watch's frames
		// are made around the same bytes): it shows what an item costs
		// when encoded, which the bound below must tell apart.
		first := perItem(func() { list(kind.path) })
		watch(kind.path)
		a := allocs{list: perItem(func() { list(kind.path) }), watch: perItem(func() { watch(kind.path) })}
		got[kind.name] = a
		t.Logf("%s: %.2f allocations per list item, %.2f per watch event; the first list, which encoded them, %.1f per item", kind.name, a.list, a.watch, first)
		if first <= bound {
			t.Errorf("%s: the first list allocated %.1f per item, no more than the bound of %d for cached bytes: the test cannot tell encoding from cached bytes", kind.name, first, bound)
		}
	}
	for name, a := range got {
		if a.list > bound || a.watch > bound {
			t.Errorf("%s: %.1f allocations per list item and %.1f per watch event, want at most %d: encoded per request, not from cached bytes", name, a.list, a.watch, bound)
		}
	}
	if p, c := got["pods"], got["custom resources"]; c.list > 2*p.list+1 || c.watch > 2*p.watch+1 {
		t.Errorf("custom resources allocate %.2f per list item and %.2f per watch event, pods %.2f and %.2f: they do not take the pods' path", c.list, c.watch, p.list, p.watch)
	}
}
