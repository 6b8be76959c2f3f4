package watchcache

import (
	"bytes"
	"testing"
)

// TestSmallPodSize pins the size of the benchmarks' pod as stored in etcd
// (protobuf), the yardstick of the heap-per-pod figures.
func TestSmallPodSize(t *testing.T) {
	var buf bytes.Buffer
	if err := corev1Codec.Encode(smallPod(12345, "ns-45", "pod-12345", nodeName(123)), &buf); err != nil {
		t.Fatal(err)
	}
	t.Logf("small pod: %d bytes of protobuf", buf.Len())
	if buf.Len() < 400 || buf.Len() > 1000 {
		t.Errorf("small pod is %d bytes of protobuf, want 400..1000 (perf-anchors' 653-byte pod)", buf.Len())
	}
}
