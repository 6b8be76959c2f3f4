package workload

import (
	"context"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// scriptedWatches hands out prepared watches in order and records the
// options each was opened with.
type scriptedWatches struct {
	watches []*watch.FakeWatcher
	opened  []metav1.ListOptions
}

func (s *scriptedWatches) Watch(_ context.Context, lo metav1.ListOptions) (watch.Interface, error) {
	s.opened = append(s.opened, lo)
	w := s.watches[0]
	s.watches = s.watches[1:]
	return w, nil
}

func benchPod(ns string, rv uint64, sent bool) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns, ResourceVersion: strconv.FormatUint(rv, 10)}}
	if sent {
		p.Annotations = map[string]string{sentAnnotation: strconv.FormatInt(time.Now().UnixNano(), 10)}
	}
	return p
}

// TestWatcherDetectsAMissedEvent plays a server that drops one update,
// repeats another and ends the stream once: the watcher resumes from the
// last resourceVersion it saw, waits for the missing update until its
// deadline, and the check counts one lost and one duplicate.
func TestWatcherDetectsAMissedEvent(t *testing.T) {
	first, second := watch.NewFakeWithChanSize(10, false), watch.NewFakeWithChanSize(10, false)
	first.Modify(benchPod("bench", 11, true))
	first.Modify(benchPod("other", 12, true)) // another namespace: ignored
	first.Add(benchPod("bench", 13, false))   // not an update: ignored
	first.Action(watch.Bookmark, benchPod("", 14, false))
	first.Stop()
	// 15 is never sent.
	second.Modify(benchPod("bench", 16, true))
	second.Modify(benchPod("bench", 16, true))
	pods := &scriptedWatches{watches: []*watch.FakeWatcher{first, second}}

	w := &watcher{namespace: "bench", want: 3}
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	if err := w.run(ctx, pods, metav1.ListOptions{ResourceVersion: "10"}, func() {}); err != nil {
		t.Fatal(err)
	}
	if len(pods.opened) != 2 || pods.opened[1].ResourceVersion != "14" {
		t.Fatalf("watches opened with %+v, want a second one from resourceVersion 14", pods.opened)
	}
	got := CheckDelivery([]uint64{11, 15, 16}, w.received)
	want := Delivery{Expected: 3, Received: 3, Lost: 1, Duplicates: 1}
	if got != want || w.restarts != 1 || len(w.latencies) != 3 {
		t.Fatalf("received %v: %+v, %d restarts, %d latencies; want %+v, 1 restart, 3 latencies", w.received, got, w.restarts, len(w.latencies), want)
	}
}
