package etcd

import (
	"fmt"
	"testing"

	storagetesting "k8s.io/apiserver/pkg/storage/testing"
)

// Upstream's storage benchmarks against this store, at a size that fits a
// small machine. The side-by-side comparison with upstream's etcd3 store,
// at upstream's sizes, lives in the bench/ module.

func BenchmarkStoreList(b *testing.B) {
	const namespaces, podsPerNamespace, nodes = 10, 300, 100
	b.Run(fmt.Sprintf("Namespaces=%d/Pods=%d/Nodes=%d", namespaces, namespaces*podsPerNamespace, nodes), func(b *testing.B) {
		data := storagetesting.PrepareBenchmarkData(namespaces, podsPerNamespace, nodes)
		ctx, store, _ := testSetup(b)
		if err := storagetesting.PrecreateBenchmarkPods(ctx, store, data); err != nil {
			b.Fatal(err)
		}
		storagetesting.RunBenchmarkStoreList(ctx, b, store, data, false)
	})
}

func BenchmarkStoreWriteThroughput(b *testing.B) {
	const namespaces, podsPerNamespace, nodes = 10, 300, 100
	b.Run(fmt.Sprintf("Namespaces=%d/Pods=%d/Nodes=%d", namespaces, namespaces*podsPerNamespace, nodes), func(b *testing.B) {
		ctx, store, _ := testSetup(b)
		data := storagetesting.PrepareBenchmarkData(namespaces, podsPerNamespace, nodes)
		b.ResetTimer()
		storagetesting.RunBenchmarkWriteThroughput(ctx, b, store, data, false, nil)
	})
}
