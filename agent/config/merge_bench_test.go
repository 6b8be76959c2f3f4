package config

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// maxPods is the kubelet's default pod limit per node: the largest snapshot
// a source sends in practice.
const maxPods = 110

func snapshot(image string) []*v1.Pod {
	pods := make([]*v1.Pod, maxPods)
	for i := range pods {
		pods[i] = pod(fmt.Sprintf("pod-%03d", i), fmt.Sprintf("uid-%03d", i))
	}
	pods[0] = pod("pod-000", "uid-000", withImage(image))
	return pods
}

// BenchmarkMergeIdenticalSnapshot: the cost of a snapshot that changes
// nothing (the api source sends the full set on every watch event).
func BenchmarkMergeIdenticalSnapshot(b *testing.B) {
	st, _ := Merge(State{}, set(api, snapshot("v1")...), now)
	in := set(api, snapshot("v1")...)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Merge(st, in, now)
	}
}

// BenchmarkMergeSameObjects: an identical snapshot made of the objects sent
// before, as the file source and an UndeltaStore send.
func BenchmarkMergeSameObjects(b *testing.B) {
	in := set(api, snapshot("v1")...)
	st, _ := Merge(State{}, in, now)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Merge(st, in, now)
	}
}

// BenchmarkMergeOneUpdate: a snapshot in which one pod of 110 changed.
func BenchmarkMergeOneUpdate(b *testing.B) {
	st, _ := Merge(State{}, set(api, snapshot("v1")...), now)
	in := set(api, snapshot("v2")...)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, res := Merge(st, in, now); len(res.Updates) != 1 {
			b.Fatalf("updates %v", describe(res.Updates))
		}
	}
}
