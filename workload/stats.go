package workload

import (
	"slices"
	"time"
)

// latencies collects durations and reports nearest-rank percentiles.
type latencies []time.Duration

// percentile returns the nearest-rank p-th percentile (0 < p <= 100), or
// 0 when empty. It sorts l in place.
func (l latencies) percentile(p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	slices.Sort(l)
	rank := int(float64(len(l))*p/100+0.5) - 1
	rank = max(0, min(rank, len(l)-1))
	return l[rank]
}

// fill sets the percentile fields of r from l.
func (l latencies) fill(r *Result) {
	r.P50 = l.percentile(50)
	r.P99 = l.percentile(99)
}

// rate is n per second over d, or 0 when d is 0.
func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}
