package flowcontrol

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// infoOf parses a request as the filter does.
func infoOf(t *testing.T, method, target string) (*genericapirequest.RequestInfo, url.Values) {
	t.Helper()
	r, err := http.NewRequest(method, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &genericapirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	info, err := f.NewRequestInfo(r)
	if err != nil {
		t.Fatal(err)
	}
	return info, r.URL.Query()
}

// counted counts n objects of every resource; -1 is "still filling".
func counted(n int64) ObjectCount { return func(string, string) (int64, bool) { return n, true } }

func TestEstimateWorkAsUpstream(t *testing.T) {
	notCounted := func(string, string) (int64, bool) { return 0, false }
	for _, tc := range []struct {
		name          string
		method, url   string
		count         ObjectCount
		watches       int
		levelMaxSeats int
		want          workEstimate
	}{
		{"a get is one seat", "GET", "/api/v1/namespaces/a/pods/p", counted(100000), 0, 0, workEstimate{seats: 1}},
		{"a list from the cache reads every object: 799 pods, 8 seats", "GET", "/api/v1/pods?resourceVersion=0", counted(799), 0, 0, workEstimate{seats: 8}},
		{"a list from the cache with a limit still reads every object", "GET", "/api/v1/pods?resourceVersion=0&limit=10", counted(799), 0, 0, workEstimate{seats: 8}},
		{"a small list is one seat", "GET", "/api/v1/pods", counted(5), 0, 0, workEstimate{seats: 1}},
		{"an empty list is one seat", "GET", "/api/v1/pods", counted(0), 0, 0, workEstimate{seats: 1}},
		{"a large list is at most 10 seats", "GET", "/api/v1/pods", counted(100000), 0, 0, workEstimate{seats: 10}},
		{"within the level's maximum", "GET", "/api/v1/pods", counted(100000), 0, 4, workEstimate{seats: 4}},
		{"a list by name is one object", "GET", "/api/v1/namespaces/a/pods?fieldSelector=metadata.name%3Dp", counted(100000), 0, 0, workEstimate{seats: 1}},
		{"an exact paginated list is served from the cache too: every object", "GET", "/api/v1/pods?limit=250&resourceVersion=5&resourceVersionMatch=Exact", counted(450), 0, 0, workEstimate{seats: 5}},
		{"with a selector, every object", "GET", "/api/v1/pods?limit=100&labelSelector=a%3Db&resourceVersion=5&resourceVersionMatch=Exact", counted(300), 0, 0, workEstimate{seats: 3}},
		{"a count not known yet costs the most", "GET", "/api/v1/pods", counted(-1), 0, 0, workEstimate{seats: 10}},
		{"an uncounted resource is one seat", "GET", "/api/v1/events", notCounted, 0, 0, workEstimate{seats: 1}},
		{"a watch from now is one seat", "GET", "/api/v1/pods?watch=true&resourceVersion=12", counted(5000), 0, 0, workEstimate{seats: 1}},
		{"a watch with the current objects costs their list", "GET", "/api/v1/pods?watch=true", counted(5000), 0, 0, workEstimate{seats: 10}},
		{"a watch with initial events costs their list", "GET", "/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", counted(250), 0, 0, workEstimate{seats: 3}},
		{"a write with few watchers is one seat", "POST", "/api/v1/namespaces/a/configmaps", counted(0), 9, 0, workEstimate{seats: 1}},
		{"10 watchers: one seat for 5ms more", "POST", "/api/v1/namespaces/a/configmaps", counted(0), 10, 0, workEstimate{seats: 1, additionalLatency: 5 * time.Millisecond}},
		{"55 watchers: 6 seats for 5ms", "PUT", "/api/v1/namespaces/a/configmaps/c", counted(0), 55, 0, workEstimate{seats: 6, additionalLatency: 5 * time.Millisecond}},
		{"1000 watchers: 10 seats for 50ms (100 seats' work)", "DELETE", "/api/v1/namespaces/a/configmaps/c", counted(0), 1000, 0, workEstimate{seats: 10, additionalLatency: 50 * time.Millisecond}},
		{"the level's maximum spreads the work longer", "PATCH", "/api/v1/namespaces/a/configmaps/c", counted(0), 40, 2, workEstimate{seats: 2, additionalLatency: 10 * time.Millisecond}},
		{"a token request notifies nobody", "POST", "/api/v1/namespaces/a/serviceaccounts/default/token", counted(0), 1000, 0, workEstimate{seats: 1}},
		{"a deletecollection is one seat", "DELETE", "/api/v1/namespaces/a/configmaps", counted(100000), 1000, 0, workEstimate{seats: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, query := infoOf(t, tc.method, tc.url)
			if got := estimateWork(info, query, tc.count, tc.watches, tc.levelMaxSeats); got != tc.want {
				t.Errorf("%s %s: %+v, want %+v", tc.method, tc.url, got, tc.want)
			}
		})
	}
}

func TestLevelMaxSeatsAsUpstream(t *testing.T) {
	for _, tc := range []struct {
		name  string
		level *levelConfig
		want  int
	}{
		// The bootstrap levels on 600 seats (TestSeatSplit): 15% of
		// nominal, at most nominal / handSize.
		{"workload-low 245 seats, hand 6", lvl("workload-low", 245, 0, 0, 128, 6, 50), 37},
		{"global-default 49 seats, hand 6", lvl("global-default", 49, 0, 0, 128, 6, 50), 8},
		{"catch-all 13 seats, hand 6", lvl("catch-all", 13, 0, 0, 64, 6, 50), 2},
		{"a level of 2 seats, hand 6: at least 1", lvl("small", 2, 0, 0, 64, 6, 50), 1},
		{"a rejecting level has no maximum of its own", lvl("reject", 100, 0, 0, 0, 0, 0), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.level.maxSeats(); got != tc.want {
				t.Errorf("maxSeats: %d, want %d", got, tc.want)
			}
		})
	}
}

func TestWatchTrackerCountsInterestedWatches(t *testing.T) {
	tr := newWatchTracker()
	var forgets []func()
	for _, u := range []string{
		"/api/v1/configmaps?watch=true",                                              // every namespace
		"/api/v1/namespaces/a/configmaps?watch=true",                                 // namespace a
		"/api/v1/namespaces/b/configmaps?watch=true",                                 // namespace b
		"/api/v1/namespaces/a/configmaps?watch=true&fieldSelector=metadata.name%3Dc", // one object
		"/api/v1/pods?watch=true&fieldSelector=spec.nodeName%3Dn1",                   // indexed: not counted
		"/api/v1/pods?watch=true",
	} {
		info, q := infoOf(t, "GET", u)
		forgets = append(forgets, tr.register(info, q))
	}
	for _, tc := range []struct {
		method, url string
		want        int
	}{
		{"PUT", "/api/v1/namespaces/a/configmaps/c", 3},
		{"PUT", "/api/v1/namespaces/a/configmaps/d", 2},
		{"POST", "/api/v1/namespaces/b/configmaps", 2},
		{"POST", "/api/v1/namespaces/z/configmaps", 1},
		{"POST", "/api/v1/namespaces/a/pods", 1},
		{"POST", "/apis/apps/v1/namespaces/a/deployments", 0},
	} {
		info, _ := infoOf(t, tc.method, tc.url)
		if got := tr.interested(info); got != tc.want {
			t.Errorf("%s %s: %d watches, want %d", tc.method, tc.url, got, tc.want)
		}
	}
	for _, f := range forgets {
		f()
	}
	info, _ := infoOf(t, "PUT", "/api/v1/namespaces/a/configmaps/c")
	if got := tr.interested(info); got != 0 || len(tr.counts) != 0 {
		t.Errorf("after the watches ended: %d interested, %d keys", got, len(tr.counts))
	}
}

func TestWideRequestTakesItsSeats(t *testing.T) {
	l := lvl("l", 10, 0, 0, 4, 2, 10)
	d := dispatcherOf(l)
	wide, out := d.acquireWork(t.Context(), noWait, l, 1, workEstimate{seats: 8}, nil)
	if out != executed {
		t.Fatalf("wide: %v", out)
	}
	inUse := func() int {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.levels["l"].inUse
	}
	if got := inUse(); got != 8 {
		t.Fatalf("seats in use: %d, want 8", got)
	}
	// 2 seats are free: a request of 3 waits.
	ch := startWork(t, d, l, 2, workEstimate{seats: 3})
	waitQueued(t, d, 1)
	select {
	case r := <-ch:
		t.Fatalf("a request of 3 seats ran with 2 free: %v", r.out)
	case <-time.After(20 * time.Millisecond):
	}
	wide.release()
	r := <-ch
	if r.out != executed {
		t.Fatalf("after the wide one: %v", r.out)
	}
	if got := inUse(); got != 3 {
		t.Errorf("seats in use: %d, want 3", got)
	}
	r.s.release()
	if got := inUse(); got != 0 {
		t.Errorf("seats in use at the end: %d", got)
	}
}

func TestWiderThanTheLevelRunsAlone(t *testing.T) {
	l := lvl("l", 4, 0, 0, 4, 2, 10)
	d := dispatcherOf(l)
	one, _ := d.acquire(t.Context(), noWait, l, 1)
	ch := startWork(t, d, l, 2, workEstimate{seats: 10})
	waitQueued(t, d, 1)
	one.release()
	r := <-ch
	if r.out != executed {
		t.Fatalf("wider than the level once alone: %v", r.out)
	}
	r.s.release()
}

// startWork runs acquireWork in a goroutine; its result arrives on the
// channel.
func startWork(t *testing.T, d *dispatcher, lc *levelConfig, hash uint64, we workEstimate) <-chan result {
	ch := make(chan result, 1)
	go func() {
		s, out := d.acquireWork(t.Context(), noWait, lc, hash, we, nil)
		ch <- result{s, out}
	}()
	return ch
}

func TestAdditionalLatencyHoldsSeats(t *testing.T) {
	l := lvl("l", 1, 0, 0, 0, 0, 0)
	d := dispatcherOf(l)
	s, out := d.acquireWork(t.Context(), noWait, l, 1, workEstimate{seats: 1, additionalLatency: 200 * time.Millisecond}, nil)
	if out != executed {
		t.Fatal(out)
	}
	s.release()
	if _, out := d.acquire(t.Context(), noWait, l, 2); out != rejectedFull {
		t.Fatalf("right after release, within the additional latency: %v, want rejected", out)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, out := d.acquire(t.Context(), noWait, l, 2)
		if out == executed {
			s.release()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the seat never came back")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
