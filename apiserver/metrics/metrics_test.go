package metrics_test

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"

	"github.com/kite-project/kite/apiserver/metrics"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// scrape fetches /metrics over HTTP and parses it as Prometheus does.
func scrape(t *testing.T, m *metrics.Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

func labelString(m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// values returns each series of a family as "labels" -> value (counters,
// gauges) or sample count (histograms).
func values(fams map[string]*dto.MetricFamily, name string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range fams[name].GetMetric() {
		switch {
		case m.Counter != nil:
			out[labelString(m)] = m.Counter.GetValue()
		case m.Gauge != nil:
			out[labelString(m)] = m.Gauge.GetValue()
		case m.Histogram != nil:
			out[labelString(m)] = float64(m.Histogram.GetSampleCount())
		}
	}
	return out
}

func TestRequestLabelsAsUpstream(t *testing.T) {
	tests := []struct {
		name        string
		method, url string
		contentType string
		req         metrics.Request
		code        int
		want        string // labels without code, sorted
	}{
		{"list in a namespace", "GET", "/api/v1/namespaces/default/pods", "", metrics.Request{Verb: "list", Version: "v1", Resource: "pods", Namespace: "default"}, 200,
			"component=apiserver,dry_run=,group=,resource=pods,scope=namespace,subresource=,verb=LIST,version=v1"},
		{"list across namespaces", "GET", "/api/v1/pods", "", metrics.Request{Verb: "list", Version: "v1", Resource: "pods"}, 200,
			"component=apiserver,dry_run=,group=,resource=pods,scope=cluster,subresource=,verb=LIST,version=v1"},
		{"get a missing object", "GET", "/api/v1/namespaces/default/pods/x", "", metrics.Request{Verb: "get", Version: "v1", Resource: "pods", Namespace: "default", Name: "x"}, 404,
			"component=apiserver,dry_run=,group=,resource=pods,scope=resource,subresource=,verb=GET,version=v1"},
		{"create is POST with resource scope", "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", "", metrics.Request{Verb: "create", Group: "coordination.k8s.io", Version: "v1", Resource: "leases", Namespace: "kube-node-lease"}, 201,
			"component=apiserver,dry_run=,group=coordination.k8s.io,resource=leases,scope=resource,subresource=,verb=POST,version=v1"},
		{"update status is PUT", "PUT", "/api/v1/nodes/n1/status", "", metrics.Request{Verb: "update", Version: "v1", Resource: "nodes", Subresource: "status", Name: "n1"}, 200,
			"component=apiserver,dry_run=,group=,resource=nodes,scope=resource,subresource=status,verb=PUT,version=v1"},
		{"watch=true makes a list a WATCH", "GET", "/api/v1/pods?watch=true", "", metrics.Request{Verb: "list", Version: "v1", Resource: "pods"}, 200,
			"component=apiserver,dry_run=,group=,resource=pods,scope=cluster,subresource=,verb=WATCH,version=v1"},
		{"watch=false stays a LIST", "GET", "/api/v1/pods?watch=false", "", metrics.Request{Verb: "list", Version: "v1", Resource: "pods"}, 200,
			"component=apiserver,dry_run=,group=,resource=pods,scope=cluster,subresource=,verb=LIST,version=v1"},
		{"server-side apply is APPLY", "PATCH", "/api/v1/namespaces/a/configmaps/c", "application/apply-patch+yaml", metrics.Request{Verb: "patch", Version: "v1", Resource: "configmaps", Namespace: "a", Name: "c"}, 200,
			"component=apiserver,dry_run=,group=,resource=configmaps,scope=resource,subresource=,verb=APPLY,version=v1"},
		{"dry run All", "DELETE", "/api/v1/namespaces/a/pods/p?dryRun=All&dryRun=All", "", metrics.Request{Verb: "delete", Version: "v1", Resource: "pods", Namespace: "a", Name: "p"}, 200,
			"component=apiserver,dry_run=All,group=,resource=pods,scope=resource,subresource=,verb=DELETE,version=v1"},
		{"invalid dry run", "DELETE", "/api/v1/namespaces/a/pods/p?dryRun=Some", "", metrics.Request{Verb: "delete", Version: "v1", Resource: "pods", Namespace: "a", Name: "p"}, 400,
			"component=apiserver,dry_run=invalid,group=,resource=pods,scope=resource,subresource=,verb=DELETE,version=v1"},
		{"log subresource is CONNECT", "GET", "/api/v1/namespaces/a/pods/p/log", "", metrics.Request{Verb: "get", Version: "v1", Resource: "pods", Subresource: "log", Namespace: "a", Name: "p"}, 200,
			"component=apiserver,dry_run=,group=,resource=pods,scope=resource,subresource=log,verb=CONNECT,version=v1"},
		{"unknown verb is other", "GET", "/api/v1/pods", "", metrics.Request{Verb: "frobnicate", Version: "v1", Resource: "pods"}, 200,
			"component=apiserver,dry_run=,group=,resource=pods,scope=cluster,subresource=,verb=other,version=v1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := metrics.New(metrics.Options{})
			h := m.Instrument(tc.req, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.code)
				io.WriteString(w, "{}")
			}))
			srv := httptest.NewServer(h)
			defer srv.Close()
			req, _ := http.NewRequest(tc.method, srv.URL+tc.url, nil)
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()

			fams := scrape(t, m)
			wantTotal := map[string]float64{fmt.Sprintf("code=%d,%s", tc.code, tc.want): 1}
			if got := values(fams, "apiserver_request_total"); fmt.Sprint(got) != fmt.Sprint(wantTotal) {
				t.Errorf("apiserver_request_total = %v, want %v", got, wantTotal)
			}
			wantDur := map[string]float64{tc.want: 1}
			if got := values(fams, "apiserver_request_duration_seconds"); fmt.Sprint(got) != fmt.Sprint(wantDur) {
				t.Errorf("apiserver_request_duration_seconds = %v, want %v", got, wantDur)
			}
		})
	}
}

func TestHistogramBucketsAndHelpAreUpstreams(t *testing.T) {
	m := metrics.New(metrics.Options{})
	m.ObserveRequest(httptest.NewRequest("GET", "/api/v1/pods", nil), metrics.Request{Verb: "list", Version: "v1", Resource: "pods"}, 200, 30*time.Millisecond)
	m.EtcdRequest("list", "", "pods", time.Now(), nil)
	fams := scrape(t, m)
	for _, name := range []string{"apiserver_request_duration_seconds", "etcd_request_duration_seconds"} {
		h := fams[name].GetMetric()[0].GetHistogram()
		var bounds []float64
		for _, b := range h.GetBucket() {
			bounds = append(bounds, b.GetUpperBound())
		}
		want := []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60, math.Inf(1)}
		if fmt.Sprint(bounds) != fmt.Sprint(want) {
			t.Errorf("%s buckets %v", name, bounds)
		}
	}
	if help := fams["apiserver_request_total"].GetHelp(); !strings.HasPrefix(help, "[STABLE] ") {
		t.Errorf("help %q lacks the stability prefix", help)
	}
}

func TestStorageAndWatchMetrics(t *testing.T) {
	m := metrics.New(metrics.Options{})
	m.WatchEvent("", "v1", "pods", 700)
	m.WatchEvent("", "v1", "pods", 3000)
	m.SetObjectCount("", "pods", 12)
	m.SetObjectCount("coordination.k8s.io", "leases", 3)
	m.EtcdRequest("get", "", "pods", time.Now(), nil)
	m.EtcdRequest("get", "", "pods", time.Now(), errors.New("boom"))
	fams := scrape(t, m)
	tests := []struct {
		family string
		want   map[string]float64
	}{
		{"apiserver_watch_events_total", map[string]float64{"group=,resource=pods,version=v1": 2}},
		{"apiserver_watch_events_sizes", map[string]float64{"group=,resource=pods,version=v1": 2}},
		{"apiserver_resource_objects", map[string]float64{"group=,resource=pods": 12, "group=coordination.k8s.io,resource=leases": 3}},
		{"apiserver_storage_objects", map[string]float64{"resource=pods": 12, "resource=leases.coordination.k8s.io": 3}},
		{"etcd_requests_total", map[string]float64{"group=,operation=get,resource=pods": 2}},
		{"etcd_request_errors_total", map[string]float64{"group=,operation=get,resource=pods": 1}},
		{"etcd_request_duration_seconds", map[string]float64{"group=,operation=get,resource=pods": 2}},
	}
	for _, tc := range tests {
		if got := values(fams, tc.family); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s = %v, want %v", tc.family, got, tc.want)
		}
	}
}

// TestWatchStreamsThroughInstrument checks that an instrumented watch can
// still flush, counts as long-running while it runs, and is recorded when
// it ends.
func TestWatchStreamsThroughInstrument(t *testing.T) {
	m := metrics.New(metrics.Options{})
	release := make(chan struct{})
	h := m.Instrument(metrics.Request{Verb: "watch", Version: "v1", Resource: "pods"}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "event-1\n")
		w.(http.Flusher).Flush()
		<-release
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/v1/pods?watch=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line := make([]byte, len("event-1\n"))
	if _, err := io.ReadFull(resp.Body, line); err != nil || string(line) != "event-1\n" {
		t.Fatalf("first event %q, %v: flush did not reach the client", line, err)
	}
	running := values(scrape(t, m), "apiserver_longrunning_requests")
	if want := "component=apiserver,group=,resource=pods,scope=cluster,subresource=,verb=WATCH,version=v1"; running[want] != 1 {
		t.Errorf("longrunning while watching = %v", running)
	}
	close(release)
	io.Copy(io.Discard, resp.Body)
	// The handler's deferred recording runs before the server finishes
	// the response, which the client has now read to the end.
	fams := scrape(t, m)
	if got := values(fams, "apiserver_longrunning_requests"); got["component=apiserver,group=,resource=pods,scope=cluster,subresource=,verb=WATCH,version=v1"] != 0 {
		t.Errorf("longrunning after the watch = %v", got)
	}
	if got := values(fams, "apiserver_request_total"); len(got) != 1 {
		t.Errorf("request_total after the watch = %v", got)
	}
}

func TestInflightHighWaterMark(t *testing.T) {
	m := metrics.New(metrics.Options{})
	started, release := make(chan struct{}), make(chan struct{})
	h := m.TrackInflight(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") == "" {
			started <- struct{}{}
			<-release
		}
	}), func(r *http.Request) bool { return r.URL.Query().Get("watch") != "" })
	srv := httptest.NewServer(h)
	defer srv.Close()

	done := make(chan error, 2)
	for _, method := range []string{"GET", "POST"} {
		go func() {
			req, _ := http.NewRequest(method, srv.URL+"/api/v1/pods", nil)
			resp, err := srv.Client().Do(req)
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
	}
	<-started
	<-started
	// A long-running request is not counted.
	resp, err := http.Get(srv.URL + "/api/v1/pods?watch=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	want := map[string]float64{"request_kind=mutating": 1, "request_kind=readOnly": 1}
	if got := values(scrape(t, m), "apiserver_current_inflight_requests"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("while two run: %v, want %v", got, want)
	}
	close(release)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	// The peak since the last scrape is still the running count then.
	if got := values(scrape(t, m), "apiserver_current_inflight_requests"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("first scrape after they ended: %v, want %v", got, want)
	}
	zero := map[string]float64{"request_kind=mutating": 0, "request_kind=readOnly": 0}
	if got := values(scrape(t, m), "apiserver_current_inflight_requests"); fmt.Sprint(got) != fmt.Sprint(zero) {
		t.Errorf("second scrape: %v, want %v", got, zero)
	}
}

func TestInstancesAreIndependent(t *testing.T) {
	a, b := metrics.New(metrics.Options{}), metrics.New(metrics.Options{RuntimeMetrics: true})
	a.WatchEvent("", "v1", "pods", 1)
	if got := values(scrape(t, b), "apiserver_watch_events_total"); len(got) != 0 {
		t.Errorf("b sees a's watch events: %v", got)
	}
	if _, ok := scrape(t, b)["go_goroutines"]; !ok {
		t.Error("RuntimeMetrics did not add go_goroutines")
	}
	if _, ok := scrape(t, a)["go_goroutines"]; ok {
		t.Error("runtime metrics present without RuntimeMetrics")
	}
}
