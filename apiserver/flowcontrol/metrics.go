package flowcontrol

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are upstream's apiserver_flowcontrol_* metrics
// (k8s.io/apiserver/pkg/util/flowcontrol/metrics), with its names, labels
// and buckets, for what Kite's APF does: the requests dispatched, waiting,
// executing and rejected per priority level and flow schema, their wait
// and estimated seats, and each level's seats.
type metrics struct {
	rejected          *prometheus.CounterVec
	dispatched        *prometheus.CounterVec
	inQueue           *prometheus.GaugeVec
	executing         *prometheus.GaugeVec
	executingSeats    *prometheus.GaugeVec
	waitDuration      *prometheus.HistogramVec
	estimatedSeats    *prometheus.HistogramVec
	watchCountSamples *prometheus.HistogramVec
	nominalSeats      *prometheus.GaugeVec
	lowerSeats        *prometheus.GaugeVec
	upperSeats        *prometheus.GaugeVec

	// flows caches each (level, schema) pair's children: label lookups
	// cost more than the rest of the filter.
	flows sync.Map // flowKey -> *flowMetrics
}

type flowKey struct{ level, schema string }

// flowMetrics are one (level, schema) pair's metrics.
type flowMetrics struct {
	dispatched                         prometheus.Counter
	inQueue, executing, executingSeats prometheus.Gauge
	waitExecuted, waitRejected         prometheus.Observer
	estimatedSeats, watchCountSamples  prometheus.Observer
	rejectedReasons                    map[string]prometheus.Counter
}

// The rejection reasons, upstream's.
const (
	reasonQueueFull        = "queue-full"
	reasonConcurrencyLimit = "concurrency-limit"
	reasonTimeOut          = "time-out"
	reasonCancelled        = "cancelled"
)

func newMetrics() *metrics {
	const ns, sub = "apiserver", "flowcontrol"
	pf := []string{"priority_level", "flow_schema"}
	pl := []string{"priority_level"}
	requestDurationSecondsBuckets := []float64{0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30}
	counter := func(name, help string, labels []string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help}, labels)
	}
	gauge := func(name, help string, labels []string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help}, labels)
	}
	histogram := func(name, help string, buckets []float64, labels []string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help, Buckets: buckets}, labels)
	}
	return &metrics{
		rejected:          counter("rejected_requests_total", "[BETA] Number of requests rejected by API Priority and Fairness subsystem", append(pf, "reason")),
		dispatched:        counter("dispatched_requests_total", "[BETA] Number of requests executed by API Priority and Fairness subsystem", pf),
		inQueue:           gauge("current_inqueue_requests", "[BETA] Number of requests currently pending in queues of the API Priority and Fairness subsystem", pf),
		executing:         gauge("current_executing_requests", "[BETA] Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem", pf),
		executingSeats:    gauge("current_executing_seats", "[BETA] Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem", pf),
		waitDuration:      histogram("request_wait_duration_seconds", "[BETA] Length of time a request spent waiting in its queue", requestDurationSecondsBuckets, append(pf, "execute")),
		estimatedSeats:    histogram("work_estimated_seats", "[ALPHA] Number of estimated seats (maximum of initial and final seats) associated with requests in API Priority and Fairness", []float64{1, 2, 4, 8, 16, 32, 64, 100}, pf),
		watchCountSamples: histogram("watch_count_samples", "[ALPHA] count of watchers for mutating requests in API Priority and Fairness", []float64{0, 1, 10, 100, 1000, 10000}, pf),
		nominalSeats:      gauge("nominal_limit_seats", "[BETA] Nominal number of execution seats configured for each priority level", pl),
		lowerSeats:        gauge("lower_limit_seats", "[ALPHA] Configured lower bound on number of execution seats available to each priority level", pl),
		upperSeats:        gauge("upper_limit_seats", "[ALPHA] Configured upper bound on number of execution seats available to each priority level", pl),
	}
}

// register adds the metrics to r.
func (m *metrics) register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.rejected, m.dispatched, m.inQueue, m.executing, m.executingSeats,
		m.waitDuration, m.estimatedSeats, m.watchCountSamples, m.nominalSeats, m.lowerSeats, m.upperSeats} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// flow is the metrics of requests of level and schema.
func (m *metrics) flow(level, schema string) *flowMetrics {
	k := flowKey{level, schema}
	if f, ok := m.flows.Load(k); ok {
		return f.(*flowMetrics)
	}
	f := &flowMetrics{
		dispatched:        m.dispatched.WithLabelValues(level, schema),
		inQueue:           m.inQueue.WithLabelValues(level, schema),
		executing:         m.executing.WithLabelValues(level, schema),
		executingSeats:    m.executingSeats.WithLabelValues(level, schema),
		waitExecuted:      m.waitDuration.WithLabelValues(level, schema, "true"),
		waitRejected:      m.waitDuration.WithLabelValues(level, schema, "false"),
		estimatedSeats:    m.estimatedSeats.WithLabelValues(level, schema),
		watchCountSamples: m.watchCountSamples.WithLabelValues(level, schema),
		rejectedReasons:   map[string]prometheus.Counter{},
	}
	for _, r := range []string{reasonQueueFull, reasonConcurrencyLimit, reasonTimeOut, reasonCancelled} {
		f.rejectedReasons[r] = m.rejected.WithLabelValues(level, schema, r)
	}
	got, _ := m.flows.LoadOrStore(k, f)
	return got.(*flowMetrics)
}

// setLevels sets the levels' seat gauges to c's, and drops those of
// levels gone.
func (m *metrics) setLevels(c *config) {
	for _, g := range []*prometheus.GaugeVec{m.nominalSeats, m.lowerSeats, m.upperSeats} {
		g.Reset()
	}
	for name, lc := range c.levels {
		m.nominalSeats.WithLabelValues(name).Set(float64(lc.nominal))
		m.lowerSeats.WithLabelValues(name).Set(float64(lc.guaranteed()))
		m.upperSeats.WithLabelValues(name).Set(float64(lc.limit()))
	}
}
