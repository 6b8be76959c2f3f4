package workload

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
)

// Memory metrics read from the server's /metrics: the process's resident
// set (Prometheus' process collector) and the Go heap in use (its Go
// collector), as kube-apiserver exposes them too.
const (
	rssMetric  = "process_resident_memory_bytes"
	heapMetric = "go_memstats_heap_inuse_bytes"
)

// scrapeMemory reads the memory metrics from /metrics. A metric the server
// does not expose reads as 0; a server without /metrics is an error.
func scrapeMemory(ctx context.Context, client kubernetes.Interface) (rss, heap float64, err error) {
	body, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("read /metrics: %w", err)
	}
	values := parseMetrics(body, rssMetric, heapMetric)
	return values[rssMetric], values[heapMetric], nil
}

// parseMetrics returns the values of the named unlabelled samples in a
// Prometheus text exposition.
func parseMetrics(body []byte, names ...string) map[string]float64 {
	out := make(map[string]float64, len(names))
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		for _, want := range names {
			if name == want {
				if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
					out[name] = v
				}
			}
		}
	}
	return out
}

// memoryDelta turns two scrapes around the creation of pods into a Memory.
func memoryDelta(pods int, rss0, heap0, rss1, heap1 float64) *Memory {
	m := &Memory{Pods: pods, RSSBefore: rss0, RSSAfter: rss1, HeapBefore: heap0, HeapAfter: heap1}
	if pods > 0 {
		if rss0 > 0 && rss1 > 0 {
			m.RSSPerPod = (rss1 - rss0) / float64(pods)
		}
		if heap0 > 0 && heap1 > 0 {
			m.HeapPerPod = (heap1 - heap0) / float64(pods)
		}
	}
	if rss1 == 0 && heap1 == 0 {
		m.NotExposedNote = "the server's /metrics has neither " + rssMetric + " nor " + heapMetric
	}
	return m
}

// atEnd adds a scrape taken after the workloads.
func (m *Memory) atEnd(rss, heap float64) {
	m.RSSEnd, m.HeapEnd = rss, heap
	if m.Pods > 0 {
		if m.RSSBefore > 0 && rss > 0 {
			m.RSSEndPerPod = (rss - m.RSSBefore) / float64(m.Pods)
		}
		if m.HeapBefore > 0 && heap > 0 {
			m.HeapEndPerPod = (heap - m.HeapBefore) / float64(m.Pods)
		}
	}
}
