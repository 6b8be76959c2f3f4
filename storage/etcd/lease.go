package etcd

import (
	"context"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// LeaseOptions configure how objects with a TTL share etcd leases. Granting
// one lease per object would load etcd with leases; like kube-apiserver the
// store grants a lease a little longer than asked and attaches later
// objects to it while it still outlives their TTL.
type LeaseOptions struct {
	// ReuseDurationSeconds caps how much longer than the TTL a shared
	// lease may live (and so how late an object may expire). Default 60.
	ReuseDurationSeconds int64
	// MaxObjectCount caps the objects attached to one lease. Default 1000.
	MaxObjectCount int64
}

// leaseManager hands out shared leases (upstream etcd3/lease_manager.go).
type leaseManager struct {
	client       *clientv3.Client
	reuseSeconds int64
	reusePercent float64
	maxObjects   int64

	// mu guards the fields below: the lease being shared.
	mu         sync.Mutex
	id         clientv3.LeaseID
	expiration time.Time
	attached   int64
}

func newLeaseManager(c *clientv3.Client, o LeaseOptions) *leaseManager {
	if o.ReuseDurationSeconds <= 0 {
		o.ReuseDurationSeconds = 60
	}
	if o.MaxObjectCount <= 0 {
		o.MaxObjectCount = 1000
	}
	return &leaseManager{client: c, reuseSeconds: o.ReuseDurationSeconds, reusePercent: 0.05, maxObjects: o.MaxObjectCount}
}

// Get returns a lease that lives at least ttl seconds and at most
// ttl + min(5% of ttl, ReuseDurationSeconds).
func (l *leaseManager) Get(ctx context.Context, ttl int64) (clientv3.LeaseID, error) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	reuse := min(int64(l.reusePercent*float64(ttl)), l.reuseSeconds)
	valid := now.Add(time.Duration(ttl) * time.Second).Before(l.expiration)
	sufficient := now.Add(time.Duration(ttl+reuse) * time.Second).After(l.expiration)
	l.attached++
	if valid && sufficient && l.attached <= l.maxObjects {
		return l.id, nil
	}
	ttl += reuse
	resp, err := l.client.Lease.Grant(ctx, ttl)
	if err != nil {
		return 0, fmt.Errorf("grant etcd lease of %ds: %w", ttl, err)
	}
	l.id = resp.ID
	l.expiration = now.Add(time.Duration(ttl) * time.Second)
	l.attached = 1
	return resp.ID, nil
}
