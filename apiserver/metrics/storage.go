package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// WatchEvent records one event written to a watch client, size being
// the bytes of its frame.
func (m *Metrics) WatchEvent(group, version, resource string, size int) {
	m.WatchEvents(group, version, resource).Record(size)
}

// WatchEvents returns the recorder of one watch's events: the labels are
// resolved once per watch rather than hashed again for every event.
func (m *Metrics) WatchEvents(group, version, resource string) WatchEventRecorder {
	return WatchEventRecorder{
		count: m.watchEvents.WithLabelValues(group, version, resource),
		sizes: m.watchEventSizes.WithLabelValues(group, version, resource),
	}
}

// WatchEventRecorder records the events of one resource's watch.
type WatchEventRecorder struct {
	count prometheus.Counter
	sizes prometheus.Observer
}

// Record records one event of size bytes.
func (r WatchEventRecorder) Record(size int) {
	r.count.Inc()
	r.sizes.Observe(float64(size))
}

// SetObjectCount records how many objects of a resource are stored; -1
// says counting failed, as upstream reports it. It sets both
// apiserver_resource_objects and the deprecated apiserver_storage_objects
// (whose resource label is "pods" or "leases.coordination.k8s.io").
func (m *Metrics) SetObjectCount(group, resource string, n int64) {
	m.resourceObjects.WithLabelValues(group, resource).Set(float64(n))
	m.storageObjects.WithLabelValues(schema.GroupResource{Group: group, Resource: resource}.String()).Set(float64(n))
}

// EtcdRequest records one call to etcd made for a resource: operation is
// upstream's name for it (get, list, create, update, delete, ...), start
// when it began, err its outcome.
func (m *Metrics) EtcdRequest(operation, group, resource string, start time.Time, err error) {
	m.etcdDurations.WithLabelValues(operation, group, resource).Observe(time.Since(start).Seconds())
	m.etcdRequests.WithLabelValues(operation, group, resource).Inc()
	if err != nil {
		m.etcdErrors.WithLabelValues(operation, group, resource).Inc()
	}
}
