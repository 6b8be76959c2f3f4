// Package metricsapi is the resource metrics API (metrics.k8s.io/v1beta1
// NodeMetrics and PodMetrics) served by Kite itself, as metrics-server
// serves it on other clusters: every Resolution it reads each node agent's
// /stats/summary, turns two consecutive CPU times into a rate, and answers
// kubectl top and the HPAs from the last computation. An APIService that
// hands metrics.k8s.io to an extension server (metrics-server installed by
// its manifests) takes precedence: the aggregation layer routes first.
//
// compute is the pure decision (table tests); API.Run owns the goroutine,
// the scrapes and the state, which requests read as one snapshot.
package metricsapi

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// point is one cumulative CPU reading.
type point struct {
	cpu uint64
	at  time.Time
}

// points are the last readings, by "node/<name>" and
// "ctr/<pod uid>/<container>".
type points map[string]point

// snapshot is what requests are answered from.
type snapshot struct {
	nodes map[string]metricsv1beta1.NodeMetrics
	// pods by namespace, then name.
	pods map[string]map[string]metricsv1beta1.PodMetrics
}

// compute turns this round's summaries into metrics, with prev (the last
// round's readings): a CPU rate needs two readings of the same node or
// container (a container whose CPU time went down restarted: it waits
// for its next reading), so a node or pod appears from its second
// scrape, as with metrics-server. A pod appears only when every one of
// its containers has both CPU and memory. It returns the readings to
// keep for the next round (this round's only: what disappeared is
// forgotten).
func compute(prev points, sums []*statsapi.Summary) (points, snapshot) {
	next := points{}
	out := snapshot{nodes: map[string]metricsv1beta1.NodeMetrics{}, pods: map[string]map[string]metricsv1beta1.PodMetrics{}}
	rate := func(key string, cpu *statsapi.CPUStats) (cores resource.Quantity, window time.Duration, at time.Time, ok bool) {
		if cpu == nil || cpu.UsageCoreNanoSeconds == nil {
			return resource.Quantity{}, 0, time.Time{}, false
		}
		cur := point{cpu: *cpu.UsageCoreNanoSeconds, at: cpu.Time.Time}
		next[key] = cur
		last, seen := prev[key]
		if !seen || !cur.at.After(last.at) || cur.cpu < last.cpu {
			return resource.Quantity{}, 0, time.Time{}, false
		}
		window = cur.at.Sub(last.at)
		nanoCores := float64(cur.cpu-last.cpu) / window.Seconds()
		return *resource.NewScaledQuantity(int64(nanoCores), resource.Nano), window, cur.at, true
	}
	for _, sum := range sums {
		if sum == nil {
			continue
		}
		n := sum.Node
		if cpu, window, at, ok := rate("node/"+n.NodeName, n.CPU); ok && n.Memory != nil && n.Memory.WorkingSetBytes != nil {
			out.nodes[n.NodeName] = metricsv1beta1.NodeMetrics{
				ObjectMeta: metav1.ObjectMeta{Name: n.NodeName},
				Timestamp:  metav1.NewTime(at), Window: metav1.Duration{Duration: window},
				Usage: corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: *resource.NewQuantity(int64(*n.Memory.WorkingSetBytes), resource.BinarySI)},
			}
		}
		for _, p := range sum.Pods {
			pm := metricsv1beta1.PodMetrics{ObjectMeta: metav1.ObjectMeta{Name: p.PodRef.Name, Namespace: p.PodRef.Namespace}}
			complete := len(p.Containers) > 0
			for _, c := range p.Containers {
				cpu, window, at, ok := rate("ctr/"+p.PodRef.UID+"/"+c.Name, c.CPU)
				if !ok || c.Memory == nil || c.Memory.WorkingSetBytes == nil {
					complete = false
					continue
				}
				// The pod's time and window are its last container's, as
				// metrics-server's (they are read together).
				pm.Timestamp, pm.Window = metav1.NewTime(at), metav1.Duration{Duration: window}
				pm.Containers = append(pm.Containers, metricsv1beta1.ContainerMetrics{Name: c.Name, Usage: corev1.ResourceList{
					corev1.ResourceCPU: cpu, corev1.ResourceMemory: *resource.NewQuantity(int64(*c.Memory.WorkingSetBytes), resource.BinarySI)}})
			}
			if !complete {
				continue
			}
			if out.pods[pm.Namespace] == nil {
				out.pods[pm.Namespace] = map[string]metricsv1beta1.PodMetrics{}
			}
			out.pods[pm.Namespace][pm.Name] = pm
		}
	}
	return next, out
}
