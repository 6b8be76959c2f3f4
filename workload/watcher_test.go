package workload

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// scriptedWatch is what one watch of a script sends: its events, then how
// it ends.
type scriptedWatch struct {
	events []watch.Event
	// end is closed (the server ends the watch), open (the watch stays
	// open until its context ends), or an ERROR event or malformed bytes
	// after the events.
	end string
}

// scriptedWatches hands out the script's watches in order, through one of
// the event sources (client-go's watch, or the raw reader of a JSON or
// protobuf body), and records the options each was opened with.
type scriptedWatches struct {
	t       *testing.T
	source  string // "client-go" or a media type
	watches []scriptedWatch
	opened  []metav1.ListOptions
}

var expired = &apierrors.NewResourceExpired("too old resource version").ErrStatus

func (s *scriptedWatches) open(ctx context.Context, lo metav1.ListOptions) (eventStream, error) {
	s.opened = append(s.opened, lo)
	w := s.watches[0]
	s.watches = s.watches[1:]
	if w.end == "error" {
		w.events = append(w.events, watch.Event{Type: watch.Error, Object: expired})
	}
	if s.source == "client-go" {
		fake := watch.NewFakeWithChanSize(len(w.events), false)
		for _, ev := range w.events {
			fake.Action(ev.Type, ev.Object)
		}
		if w.end == "closed" {
			fake.Stop()
		}
		return typedWatches{fakeWatches{fake}}.open(ctx, lo)
	}
	var body io.Reader = bytes.NewReader(encodeWatch(s.t, s.source, w.events...))
	switch w.end {
	case "open":
		body = io.MultiReader(body, untilDone{ctx})
	case "malformed":
		body = io.MultiReader(body, bytes.NewReader([]byte{0, 0, 0, 2, 0xff, 0xff, '{', '}', '\n'}))
	}
	return newRawStream(io.NopCloser(body)), nil
}

// fakeWatches hands out one prepared watch.
type fakeWatches struct{ w watch.Interface }

func (f fakeWatches) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return f.w, nil
}

// untilDone is the rest of a response body that stays open: reads block
// until the request's context ends, as an HTTP body's do.
type untilDone struct{ ctx context.Context }

func (u untilDone) Read([]byte) (int, error) {
	<-u.ctx.Done()
	return 0, u.ctx.Err()
}

func benchPod(ns string, rv uint64, sent bool) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns, ResourceVersion: strconv.FormatUint(rv, 10)}}
	if sent {
		p.Annotations = map[string]string{sentAnnotation: strconv.FormatInt(time.Now().UnixNano(), 10)}
	}
	return p
}

// TestWatcherDetectsAMissedEvent plays a server that drops one update,
// repeats another and ends the first watch (closed, with an ERROR event or,
// for the raw reader, with a malformed frame), through each event source:
// the watcher resumes from the last resourceVersion it saw, waits for the
// missing update until its deadline, and the check counts one lost and
// one duplicate.
func TestWatcherDetectsAMissedEvent(t *testing.T) {
	for _, source := range []string{"client-go", "application/json", "application/vnd.kubernetes.protobuf"} {
		for _, tt := range []struct {
			end     string
			isEnded func(error) bool
		}{
			{"closed", func(err error) bool { return errors.Is(err, io.EOF) }},
			{"error", apierrors.IsResourceExpired},
			{"malformed", func(err error) bool { return errors.Is(err, errMalformed) }},
		} {
			if tt.end == "malformed" && source == "client-go" {
				continue // client-go's decoder is not ours to test
			}
			t.Run(source+"/first watch "+tt.end, func(t *testing.T) {
				t.Parallel()
				watches := &scriptedWatches{t: t, source: source, watches: []scriptedWatch{
					{end: tt.end, events: []watch.Event{
						{Type: watch.Modified, Object: benchPod("bench", 11, true)},
						{Type: watch.Modified, Object: benchPod("other", 12, true)}, // another namespace: ignored
						{Type: watch.Added, Object: benchPod("bench", 13, false)},   // not an update: ignored
						{Type: watch.Bookmark, Object: benchPod("", 14, false)},
					}},
					// 15 is never sent.
					{end: "open", events: []watch.Event{
						{Type: watch.Modified, Object: benchPod("bench", 16, true)},
						{Type: watch.Modified, Object: benchPod("bench", 16, true)},
					}},
				}}
				w := &watcher{namespace: "bench", want: 3}
				ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
				defer cancel()
				if err := w.run(ctx, watches, metav1.ListOptions{ResourceVersion: "10"}, func() {}); err != nil {
					t.Fatal(err)
				}
				if len(watches.opened) != 2 || watches.opened[1].ResourceVersion != "14" {
					t.Fatalf("watches opened with %+v, want a second one from resourceVersion 14", watches.opened)
				}
				got := CheckDelivery([]uint64{11, 15, 16}, w.received)
				want := Delivery{Expected: 3, Received: 3, Lost: 1, Duplicates: 1}
				if got != want || w.restarts != 1 || len(w.latencies) != 3 {
					t.Fatalf("received %v: %+v, %d restarts, %d latencies; want %+v, 1 restart, 3 latencies", w.received, got, w.restarts, len(w.latencies), want)
				}
				if !tt.isEnded(w.ended) {
					t.Errorf("the first watch ended with %v, want it %s", w.ended, tt.end)
				}
			})
		}
	}
}
