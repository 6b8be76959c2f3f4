package metrics

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// WatchEvent records one event written to a watch client, size being
// the bytes of its frame.
func (m *Metrics) WatchEvent(group, version, resource string, size int) {
	m.watchEvents.WithLabelValues(group, version, resource).Inc()
	m.watchEventSizes.WithLabelValues(group, version, resource).Observe(float64(size))
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
