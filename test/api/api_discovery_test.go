package api_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func TestDiscovery(t *testing.T) {
	dc := discovery.NewDiscoveryClientForConfigOrDie(config(t))
	// client-go asks for aggregated discovery first.
	groups, resources, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	names := map[string]bool{}
	for _, g := range groups {
		names[g.Name] = true
	}
	for _, g := range []string{"", "coordination.k8s.io", "events.k8s.io"} {
		if !names[g] {
			t.Errorf("group %q missing from %v", g, names)
		}
	}
	found := map[string]metav1.APIResource{}
	for _, list := range resources {
		for _, r := range list.APIResources {
			found[list.GroupVersion+"/"+r.Name] = r
		}
	}
	pods := found["v1/pods"]
	if !pods.Namespaced || pods.Kind != "Pod" || !strings.Contains(strings.Join(pods.ShortNames, ","), "po") || len(pods.Verbs) != 8 {
		t.Errorf("pods in discovery: %+v", pods)
	}
	for _, want := range []string{"v1/pods/status", "v1/pods/binding", "v1/namespaces/finalize", "v1/nodes/status", "coordination.k8s.io/v1/leases"} {
		if _, ok := found[want]; !ok {
			t.Errorf("%s missing from discovery", want)
		}
	}
	// Legacy discovery documents.
	for _, path := range []string{"/api", "/apis", "/api/v1", "/apis/coordination.k8s.io", "/apis/coordination.k8s.io/v1"} {
		if code, _, _ := raw(t, "GET", path, "", "application/json", nil); code != 200 {
			t.Errorf("GET %s: %d", path, code)
		}
	}
	_, _, hdr := raw(t, "GET", "/apis", "", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json", nil)
	if ct := hdr.Get("Content-Type"); !strings.Contains(ct, "as=APIGroupDiscoveryList") {
		t.Errorf("aggregated discovery Content-Type %q", ct)
	}
	v, err := dc.ServerVersion()
	if err != nil || v.Major != "1" {
		t.Errorf("version: %v %+v", err, v)
	}
}

// getPath GETs path of the shared server with cfg's credentials and
// returns the status code and body.
func getPath(t *testing.T, cfg *rest.Config, path string) (int, string) {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(shared.URL() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestHealthEndpoints(t *testing.T) {
	// Health endpoints answer without credentials.
	cfg := rest.AnonymousClientConfig(config(t))
	get := func(path string) (int, string) { return getPath(t, cfg, path) }
	for _, path := range []string{"/healthz", "/livez", "/readyz"} {
		if code, body := get(path); code != 200 || body != "ok" {
			t.Errorf("%s: %d %q", path, code, body)
		}
	}
	if code, body := get("/readyz?verbose"); code != 200 || !strings.Contains(body, "[+]etcd ok") || !strings.Contains(body, "readyz check passed") {
		t.Errorf("/readyz?verbose: %d %q", code, body)
	}
	// A single check is not public (system:public-info-viewer names the
	// three paths only, as upstream); the admin reads it.
	if code, _ := get("/livez/etcd"); code != 403 {
		t.Errorf("anonymous /livez/etcd: %d, want 403", code)
	}
	if code, _ := getPath(t, config(t), "/livez/etcd"); code != 200 {
		t.Errorf("/livez/etcd: %d", code)
	}
	// Anonymous requests are on (--anonymous-auth, as upstream's default)
	// and RBAC grants system:anonymous nothing else: 403, as
	// kube-apiserver answers them.
	if code, _ := get("/api/v1/pods"); code != 403 {
		t.Errorf("API without credentials: %d, want 403", code)
	}
}

func TestLargeListIsGzipped(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := newNamespace(t, client)
	big := strings.Repeat("x", 64<<10)
	for i := range 3 {
		cm := configMap(fmt.Sprint("big-", i), map[string]string{"k": big})
		cm.Labels = map[string]string{"size": "big"}
		if _, err := client.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	hc, err := rest.HTTPClientFor(config(t))
	if err != nil {
		t.Fatal(err)
	}
	// Only the test's own configMaps: the root CA publisher adds
	// kube-root-ca.crt to the namespace at a time of its own.
	req, _ := http.NewRequestWithContext(t.Context(), "GET", shared.URL()+"/api/v1/namespaces/"+ns+"/configmaps?labelSelector=size%3Dbig", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Content-Encoding %q, want gzip", resp.Header.Get("Content-Encoding"))
	}
	data, _ := io.ReadAll(resp.Body)
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil || !bytes.Contains(plain, []byte(`"kind":"ConfigMapList"`)) {
		t.Fatalf("gunzipped body: %v %.100s", err, plain)
	}

	// Without gzip the same list comes streamed, whole.
	req, _ = http.NewRequestWithContext(t.Context(), "GET", shared.URL()+"/api/v1/namespaces/"+ns+"/configmaps?labelSelector=size%3Dbig", nil)
	req.Header.Set("Accept-Encoding", "identity")
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	identity, err := io.ReadAll(resp.Body)
	if err != nil || resp.Header.Get("Content-Encoding") != "" {
		t.Fatalf("identity body: %v, Content-Encoding %q", err, resp.Header.Get("Content-Encoding"))
	}
	var list v1.ConfigMapList
	if err := json.Unmarshal(identity, &list); err != nil || len(list.Items) != 3 || len(list.Items[2].Data["k"]) != len(big) {
		t.Fatalf("identity body: %v, %d items", err, len(list.Items))
	}
	// The items (the list's resourceVersion may have moved on).
	items := func(b []byte) []byte { return b[bytes.Index(b, []byte(`"items":`)):] }
	if !bytes.Equal(items(identity), items(plain)) {
		t.Errorf("the items differ with and without gzip")
	}
}

func TestMetricsEndpoint(t *testing.T) {
	code, _, _ := raw(t, "GET", "/api/v1/namespaces/default", "", "", nil)
	if code != 200 {
		t.Fatal(code)
	}
	hc, err := rest.HTTPClientFor(config(t))
	if err != nil {
		t.Fatal(err)
	}
	scrape := func() []byte {
		resp, err := hc.Get(shared.URL() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return body
	}
	body := scrape()
	for _, want := range []string{"apiserver_request_total", "apiserver_request_duration_seconds", "apiserver_current_inflight_requests", "etcd_request_duration_seconds"} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// Object counts are taken in the background at start.
	eventually(t, "apiserver_resource_objects for namespaces", func() (bool, error) {
		return bytes.Contains(scrape(), []byte(`apiserver_resource_objects{group="",resource="namespaces"}`)), nil
	})
}

// TestManyWatchersLoseNothing opens 200 watches on one namespace and checks
// that each receives every one of a burst of writes, in order.
func TestManyWatchersLoseNothing(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ctx := t.Context()
	ns := newNamespace(t, client)
	cms := client.CoreV1().ConfigMaps(ns)
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const watchers, writes = 200, 20
	var wg sync.WaitGroup
	errs := make(chan error, watchers)
	ready := make(chan struct{}, watchers)
	for i := range watchers {
		wg.Go(func() {
			w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
			if err != nil {
				errs <- fmt.Errorf("watcher %d: %w", i, err)
				ready <- struct{}{}
				return
			}
			defer w.Stop()
			ready <- struct{}{}
			timeout := time.After(60 * time.Second)
			for n := 0; n < writes; n++ {
				select {
				case ev, ok := <-w.ResultChan():
					if !ok {
						errs <- fmt.Errorf("watcher %d closed after %d events", i, n)
						return
					}
					if name := ev.Object.(metav1.Object).GetName(); name != fmt.Sprint("c-", n) {
						errs <- fmt.Errorf("watcher %d: event %d is %s %s", i, n, ev.Type, name)
						return
					}
				case <-timeout:
					errs <- fmt.Errorf("watcher %d: timed out after %d events", i, n)
					return
				}
			}
		})
	}
	for range watchers {
		<-ready
	}
	for n := range writes {
		if _, err := cms.Create(ctx, configMap(fmt.Sprint("c-", n), nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
