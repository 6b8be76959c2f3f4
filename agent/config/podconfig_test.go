package config

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"

	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/agent/source/sourcetest"
)

// waitTimeout is generous: the machine running the tests may be loaded.
const waitTimeout = 10 * time.Second

func TestNewRefusesBadSources(t *testing.T) {
	tests := []struct {
		name    string
		sources []string
	}{
		{"unknown source", []string{"file", "ftp"}},
		{"all-sources marker", []string{"*"}},
		{"source twice", []string{"file", "file"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(Options{Sources: tc.sources}); err == nil {
				t.Fatalf("New(%v) succeeded, want an error", tc.sources)
			}
		})
	}
}

func startPodConfig(t *testing.T, opts Options) (*PodConfig, context.CancelFunc) {
	t.Helper()
	c, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	_, logCtx := ktesting.NewTestContext(t) // logs go to the test's output
	ctx, cancel := context.WithCancel(logCtx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return c, cancel
}

func send(t *testing.T, c *PodConfig, u kubetypes.PodUpdate) {
	t.Helper()
	select {
	case c.Input() <- u:
	case <-time.After(waitTimeout):
		t.Fatalf("sending %s from %s: not received", u.Op, u.Source)
	}
}

func receive(t *testing.T, c *PodConfig) kubetypes.PodUpdate {
	t.Helper()
	select {
	case u, ok := <-c.Updates():
		if !ok {
			t.Fatal("Updates closed")
		}
		return u
	case <-time.After(waitTimeout):
		t.Fatal("no update")
	}
	return kubetypes.PodUpdate{}
}

func TestPodConfigRunsTheMerge(t *testing.T) {
	reported := &sourcetest.Recorder{}
	c, _ := startPodConfig(t, Options{Sources: []string{file, api}, Reporter: reported, Now: func() time.Time { return now }})
	if c.SeenAllSources() || c.Seen(file) {
		t.Fatal("sources seen before any update")
	}

	send(t, c, set(file, pod("a", "1"), pod("b", "2")))
	if got, want := describe([]kubetypes.PodUpdate{receive(t, c)}), []string{"ADD file [a/1,b/2]"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if !c.Seen(file) || c.Seen(api) || c.SeenAllSources() {
		t.Fatalf("after file: Seen(file)=%v Seen(api)=%v SeenAllSources=%v", c.Seen(file), c.Seen(api), c.SeenAllSources())
	}

	// A source that is not configured is refused and reported.
	send(t, c, set(http, pod("c", "3")))
	send(t, c, set(file, pod("b", "2")))
	if got, want := describe([]kubetypes.PodUpdate{receive(t, c)}), []string{"REMOVE file [a/1]"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := reported.List(); len(got) != 1 {
		t.Fatalf("problems %v, want one for the unconfigured source", got)
	}

	send(t, c, set(api))
	if got, want := describe([]kubetypes.PodUpdate{receive(t, c)}), []string{"ADD api []"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if !c.SeenAllSources() {
		t.Fatal("SeenAllSources false after every source reported")
	}
}

func TestPodConfigClosesUpdatesWhenDone(t *testing.T) {
	c, cancel := startPodConfig(t, Options{Sources: []string{file}})
	cancel()
	select {
	case _, ok := <-c.Updates():
		if ok {
			t.Fatal("update after cancel")
		}
	case <-time.After(waitTimeout):
		t.Fatal("Updates not closed after the context ended")
	}
}

// TestPodConfigRace mirrors upstream's: Seen* from other goroutines while
// updates flow (meaningful under -race).
func TestPodConfigRace(t *testing.T) {
	c, _ := startPodConfig(t, Options{Sources: []string{file, http}})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				c.SeenAllSources()
				c.Seen(http)
			}
		}
	}()
	for i := 0; i < 20; i++ {
		send(t, c, set(file, pod("a", string(rune('a'+i)))))
		if i > 0 {
			receive(t, c) // REMOVE of the previous UID
		}
		receive(t, c) // ADD
	}
	close(stop)
	wg.Wait()
}
