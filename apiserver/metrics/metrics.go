package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Options configure Metrics.
type Options struct {
	// RuntimeMetrics adds the Go runtime and process collectors
	// (go_*, process_*), as kube-apiserver's /metrics has them. Off by
	// default so that tests see only the API server's own series.
	RuntimeMetrics bool
}

// Metrics is one API server's metrics. Its methods are safe for
// concurrent use.
type Metrics struct {
	registry *prometheus.Registry

	requests        *prometheus.CounterVec
	durations       *prometheus.HistogramVec
	longRunning     *prometheus.GaugeVec
	watchEvents     *prometheus.CounterVec
	watchEventSizes *prometheus.HistogramVec
	resourceObjects *prometheus.GaugeVec
	storageObjects  *prometheus.GaugeVec
	etcdDurations   *prometheus.HistogramVec
	etcdRequests    *prometheus.CounterVec
	etcdErrors      *prometheus.CounterVec

	inflight inflight
}

// latencyBuckets are upstream's for apiserver_request_duration_seconds and
// etcd_request_duration_seconds, chosen for the latency SLOs.
var latencyBuckets = []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3,
	4, 5, 6, 8, 10, 15, 20, 30, 45, 60}

var (
	requestLabels = []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"}
	longRunLabels = []string{"verb", "group", "version", "resource", "subresource", "scope", "component"}
	gvrLabels     = []string{"group", "version", "resource"}
	etcdLabels    = []string{"operation", "group", "resource"}
)

// New returns Metrics with every series registered in a fresh registry.
func New(opts Options) *Metrics {
	m := &Metrics{registry: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apiserver_request_total",
		Help: "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
	}, append(append([]string{}, requestLabels...), "code"))
	m.durations = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "apiserver_request_duration_seconds",
		Help:    "[STABLE] Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
		Buckets: latencyBuckets,
	}, requestLabels)
	m.longRunning = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "apiserver_longrunning_requests",
		Help: "[STABLE] Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.",
	}, longRunLabels)
	m.watchEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apiserver_watch_events_total",
		Help: "[BETA] Number of events sent in watch clients",
	}, gvrLabels)
	m.watchEventSizes = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "apiserver_watch_events_sizes",
		Help:    "[BETA] Watch event size distribution in bytes",
		Buckets: prometheus.ExponentialBuckets(1024, 2.0, 8), // 1K .. 128K
	}, gvrLabels)
	m.resourceObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "apiserver_resource_objects",
		Help: "[ALPHA] Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.",
	}, []string{"group", "resource"})
	m.storageObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "apiserver_storage_objects",
		Help: "[STABLE] (Deprecated since 1.34.0) [DEPRECATED, consider using apiserver_resource_objects instead] Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.",
	}, []string{"resource"})
	m.etcdDurations = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "etcd_request_duration_seconds",
		Help:    "[ALPHA] Etcd request latency in seconds for each operation and object type.",
		Buckets: latencyBuckets,
	}, etcdLabels)
	m.etcdRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_requests_total",
		Help: "[ALPHA] Etcd request counts for each operation and object type.",
	}, etcdLabels)
	m.etcdErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_request_errors_total",
		Help: "[ALPHA] Etcd failed request counts for each operation and object type.",
	}, etcdLabels)

	m.registry.MustRegister(
		m.requests, m.durations, m.longRunning, m.watchEvents, m.watchEventSizes,
		m.resourceObjects, m.storageObjects, m.etcdDurations, m.etcdRequests, m.etcdErrors,
		&m.inflight,
	)
	if opts.RuntimeMetrics {
		m.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return m
}

// Registry is where the metrics live. Other components of the same server
// (the embedded etcd, the agent) may register their collectors here to be
// served on the same /metrics.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the registry in the Prometheus text (or negotiated
// OpenMetrics) format. Errors collecting one metric are reported in the
// response rather than failing the scrape, as kube-apiserver does.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
