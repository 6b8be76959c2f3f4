package watchcache

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimepkg "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
)

// churnPod is pod i of a rollout round: labels its round's pods share
// (a ReplicaSet's pod-template-hash), managedFields every round shares,
// and annotations of its own, as a CNI plugin writes them (Calico's
// podIP and containerID), which the cache interns too and which no other
// pod will ever have.
func churnPod(i, round int, rv uint64) *example.Pod {
	hash := fmt.Sprintf("%09x", 0x5d8f7c9b6+round)
	return &example.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns-" + strconv.Itoa(i%100), Name: "web-" + strconv.Itoa(i),
			ResourceVersion: strconv.FormatUint(rv, 10),
			Labels:          map[string]string{"app": "web", "tier": "frontend", "pod-template-hash": hash},
			Annotations: map[string]string{
				"cni.projectcalico.org/containerID": fmt.Sprintf("%064x", uint64(round)<<32|uint64(i)),
				"cni.projectcalico.org/podIP":       fmt.Sprintf("10.%d.%d.%d/32", round, i/256, i%256),
			},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{},"f:tier":{}},"f:ownerReferences":{}},"f:spec":{"f:containers":{}}}`)},
			}},
		},
		Spec: example.PodSpec{NodeName: "node-" + strconv.Itoa(i%100), RestartPolicy: "Always"},
	}
}

// BenchmarkMemoryPerPodAfterChurn reports the heap the cache holds per
// pod for 10 000 pods, once before churn (before-B/pod) and once after 10
// rounds in which every pod is deleted and created again with its new
// round's labels and new annotations (after-B/pod): a table that never
// forgot what deleted pods had would be full of their values, and share
// nothing of the later rounds. The event window is at its smallest, so
// that it holds no churned pods and the figures are of live pods alone.
func BenchmarkMemoryPerPodAfterChurn(b *testing.B) {
	const n, rounds = 10_000, 10
	for b.Loop() {
		_, _, env := testSetup(b)
		c, err := New(Options{
			Store:          env.store,
			ResourcePrefix: podPrefix,
			KeyFunc:        func(obj runtimepkg.Object) (string, error) { return storage.NamespaceKeyFunc(podPrefix, obj) },
			NewFunc:        newPod,
			NewListFunc:    newPodList,
			AttrFunc:       podAttrs,
			Indexers:       storage.IndexerFuncs{"spec.nodeName": podNodeName},
			MaxEvents:      minEvents,
		})
		if err != nil {
			b.Fatal(err)
		}
		// The dispatcher only (no Reflector): it takes the changes off
		// the hand-off queue, which would otherwise hold them all.
		c.wg.Add(1)
		go c.dispatchLoop(c.ctx)
		drained := func() {
			for {
				c.pending.mu.Lock()
				n := len(c.pending.items)
				c.pending.mu.Unlock()
				if n == 0 {
					return
				}
				time.Sleep(time.Millisecond)
			}
		}
		base := settledHeap()
		objs := make([]runtimepkg.Object, n)
		for i := range objs {
			objs[i] = churnPod(i, 0, uint64(i+1))
		}
		s := sink{c}
		if err := s.Replace(objs, strconv.Itoa(n)); err != nil {
			b.Fatal(err)
		}
		objs = nil
		drained()
		before := float64(int64(settledHeap())-int64(base)) / n
		rv := uint64(n)
		for round := 1; round <= rounds; round++ {
			for i := range n {
				rv++
				gone := churnPod(i, round-1, rv)
				if err := s.Delete(gone); err != nil {
					b.Fatal(err)
				}
				rv++
				if err := s.Add(churnPod(i, round, rv)); err != nil {
					b.Fatal(err)
				}
			}
		}
		drained()
		after := float64(int64(settledHeap())-int64(base)) / n
		b.ReportMetric(before, "before-B/pod")
		b.ReportMetric(after, "after-B/pod")
		b.ReportMetric(float64(c.interns.Held()), "intern-key-B")
		runtime.KeepAlive(c)
		c.Stop()
	}
}

// settledHeap is the live heap after two full collections.
func settledHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
