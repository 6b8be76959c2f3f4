package metrics

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// inflight counts requests being served, read-only and mutating apart.
// Like upstream, which reports "the maximal number ... in last second",
// it reports a high-water mark rather than the instantaneous value, which
// would almost always read zero: here the highest count since the previous
// scrape (then the mark drops to the current count).
type inflight struct {
	mu      sync.Mutex // guards the four counts
	current [2]int     // by kind: readOnly, mutating
	peak    [2]int
}

const (
	readOnly = iota
	mutating
)

var inflightDesc = prometheus.NewDesc("apiserver_current_inflight_requests",
	"[STABLE] Maximal number of currently used inflight request limit of this apiserver per request kind in last second.",
	[]string{"request_kind"}, nil)

func (f *inflight) Describe(ch chan<- *prometheus.Desc) { ch <- inflightDesc }

func (f *inflight) Collect(ch chan<- prometheus.Metric) {
	f.mu.Lock()
	peak := f.peak
	f.peak = f.current
	f.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(inflightDesc, prometheus.GaugeValue, float64(peak[readOnly]), "readOnly")
	ch <- prometheus.MustNewConstMetric(inflightDesc, prometheus.GaugeValue, float64(peak[mutating]), "mutating")
}

func (f *inflight) add(kind, delta int) {
	f.mu.Lock()
	f.current[kind] += delta
	f.peak[kind] = max(f.peak[kind], f.current[kind])
	f.mu.Unlock()
}

// TrackInflight returns next wrapped so that requests count in
// apiserver_current_inflight_requests while they run. GET, HEAD and
// OPTIONS count as readOnly, other methods as mutating. Requests for which
// longRunning reports true (watches, exec, logs) are not counted, as
// upstream's max-in-flight filter leaves them out; nil counts everything.
func (m *Metrics) TrackInflight(next http.Handler, longRunning func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if longRunning != nil && longRunning(r) {
			next.ServeHTTP(w, r)
			return
		}
		kind := mutating
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			kind = readOnly
		}
		m.inflight.add(kind, 1)
		defer m.inflight.add(kind, -1)
		next.ServeHTTP(w, r)
	})
}
