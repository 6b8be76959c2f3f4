package clusterdns

import (
	"context"
	"errors"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/version"
)

// DefaultMetricsPort is CoreDNS's metrics port, the kube-dns Service's
// "metrics" port.
const DefaultMetricsPort = 9153

// CoreDNS's label values for what Kite's server is: one server block for
// the root zone ("." of kubeadm's Corefile), no view.
const (
	metricsZone = "."
	metricsView = ""
)

// metrics are the series CoreDNS exports (its metrics, cache and forward
// plugins), with its names, labels and buckets, so that dashboards and
// alerts made for the kube-dns Service's metrics port work unchanged.
// Each server has its own registry: nothing is process-global.
type metrics struct {
	registry *prometheus.Registry
	server   string

	requests     *prometheus.CounterVec
	responses    *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	requestSize  *prometheus.HistogramVec
	responseSize *prometheus.HistogramVec
	cacheHits    *prometheus.CounterVec
	cacheMisses  prometheus.Counter
	cacheReqs    prometheus.Counter
	proxy        *prometheus.HistogramVec
}

// CoreDNS's buckets: plugin.TimeBuckets and its size buckets.
var (
	timeBuckets = prometheus.ExponentialBuckets(0.00025, 2, 16)
	sizeBuckets = []float64{0, 100, 200, 300, 400, 511, 1023, 2047, 4095, 8291, 16e3, 32e3, 48e3, 64e3}
)

// newMetrics registers the series of the server at addr (its "server"
// label, "dns://" and the address as CoreDNS writes it) and of cache.
func newMetrics(addr string, cache *answerCache) *metrics {
	m := &metrics{registry: prometheus.NewRegistry(), server: "dns://" + addr}
	f := func(sub, name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "coredns", Subsystem: sub, Name: name, Help: help}
	}
	h := func(sub, name, help string, buckets []float64) prometheus.HistogramOpts {
		return prometheus.HistogramOpts{Namespace: "coredns", Subsystem: sub, Name: name, Help: help, Buckets: buckets}
	}
	cacheLabels := prometheus.Labels{"server": m.server, "zones": metricsZone, "view": metricsView}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts(f("dns", "requests_total", "Counter of DNS requests made per zone, protocol and family.")),
		[]string{"server", "zone", "view", "proto", "family", "type"})
	m.responses = prometheus.NewCounterVec(prometheus.CounterOpts(f("dns", "responses_total", "Counter of response status codes.")),
		[]string{"server", "zone", "view", "rcode", "plugin"})
	m.duration = prometheus.NewHistogramVec(h("dns", "request_duration_seconds", "Histogram of the time (in seconds) each request took per zone.", timeBuckets),
		[]string{"server", "zone", "view", "type"})
	m.requestSize = prometheus.NewHistogramVec(h("dns", "request_size_bytes", "Size of the EDNS0 UDP buffer in bytes (64K for TCP) per zone and protocol.", sizeBuckets),
		[]string{"server", "zone", "view", "proto"})
	m.responseSize = prometheus.NewHistogramVec(h("dns", "response_size_bytes", "Size of the returned response in bytes.", sizeBuckets),
		[]string{"server", "zone", "view", "proto"})
	m.cacheHits = prometheus.NewCounterVec(prometheus.CounterOpts(f("cache", "hits_total", "The count of cache hits.")), []string{"server", "type", "zones", "view"})
	m.cacheMisses = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "coredns", Subsystem: "cache", Name: "misses_total", Help: "The count of cache misses. Deprecated, derive misses from cache hits/requests counters.", ConstLabels: cacheLabels})
	m.cacheReqs = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "coredns", Subsystem: "cache", Name: "requests_total", Help: "The count of cache requests.", ConstLabels: cacheLabels})
	m.proxy = prometheus.NewHistogramVec(h("proxy", "request_duration_seconds", "Histogram of the time each request took.", timeBuckets),
		[]string{"proxy_name", "to", "rcode"})
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts(f("", "build_info", "A metric with a constant '1' value labeled by version, revision, and goversion from which CoreDNS was built.")),
		[]string{"version", "revision", "goversion"})
	build.WithLabelValues(version.GitVersion, "", runtime.Version()).Set(1)
	m.registry.MustRegister(m.requests, m.responses, m.duration, m.requestSize, m.responseSize, m.cacheHits, m.cacheMisses, m.cacheReqs, m.proxy, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, kind := range []string{cacheSuccess, cacheDenial} {
		labels := prometheus.Labels{"server": m.server, "type": kind, "zones": metricsZone, "view": metricsView}
		m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "coredns", Subsystem: "cache", Name: "entries",
			Help: "The number of elements in the cache.", ConstLabels: labels}, func() float64 { return float64(cache.count(kind)) }))
	}
	return m
}

// observe records one request and its response, as CoreDNS's metrics
// plugin: plugin is what answered ("kubernetes", "cache", "forward", or
// "" for a refusal of the server's own).
func (m *metrics) observe(r, resp *dns.Msg, network string, remote net.Addr, plugin string, took time.Duration) {
	if m == nil {
		return
	}
	qtype := "other"
	if len(r.Question) > 0 {
		if s, ok := dns.TypeToString[r.Question[0].Qtype]; ok {
			qtype = s
		}
	}
	family := "1"
	if ip := addrIP(remote); ip != nil && ip.To4() == nil {
		family = "2"
	}
	reqSize := 65535 // CoreDNS: the buffer a client can take, 64K over TCP
	if network == "udp" {
		reqSize = dns.MinMsgSize
		if opt := r.IsEdns0(); opt != nil {
			reqSize = int(opt.UDPSize())
		}
	}
	m.requests.WithLabelValues(m.server, metricsZone, metricsView, network, family, qtype).Inc()
	m.requestSize.WithLabelValues(m.server, metricsZone, metricsView, network).Observe(float64(reqSize))
	m.responseSize.WithLabelValues(m.server, metricsZone, metricsView, network).Observe(float64(resp.Len()))
	m.responses.WithLabelValues(m.server, metricsZone, metricsView, rcodeString(resp.Rcode), plugin).Inc()
	m.duration.WithLabelValues(m.server, metricsZone, metricsView, qtype).Observe(took.Seconds())
}

func rcodeString(code int) string {
	if s, ok := dns.RcodeToString[code]; ok {
		return s
	}
	return strconv.Itoa(code)
}

func addrIP(a net.Addr) net.IP {
	switch a := a.(type) {
	case *net.UDPAddr:
		return a.IP
	case *net.TCPAddr:
		return a.IP
	}
	return nil
}

// cacheLookup records a lookup in the cache (kind "" for a miss).
func (m *metrics) cacheLookup(kind string) {
	if m == nil {
		return
	}
	m.cacheReqs.Inc()
	if kind == "" {
		m.cacheMisses.Inc()
		return
	}
	m.cacheHits.WithLabelValues(m.server, kind, metricsZone, metricsView).Inc()
}

// forwarded records an exchange with an upstream; rcode is "" when it
// failed.
func (m *metrics) forwarded(to string, rcode string, took time.Duration) {
	if m == nil {
		return
	}
	m.proxy.WithLabelValues("forward", to, rcode).Observe(took.Seconds())
}

// MetricsServer serves /metrics in the Prometheus text format.
type MetricsServer struct {
	ln  net.Listener
	srv *http.Server
}

// listenMetrics opens addr for m.
func listenMetrics(addr string, m *metrics) (*MetricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{}))
	return &MetricsServer{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}, nil
}

// Addr is the address served.
func (s *MetricsServer) Addr() string { return s.ln.Addr().String() }

// serve serves until ctx ends.
func (s *MetricsServer) serve(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		s.srv.Shutdown(sctx)
	})
	if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		klog.FromContext(ctx).Error(err, "Cluster DNS metrics stopped serving")
	}
	wg.Wait()
}
