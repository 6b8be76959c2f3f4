package controllers_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kite-project/kite/controllers"
)

// shapes counts the first requests of lists (not their further pages) and
// the watches a client sends, by path, selectors and whether it asks for
// metadata only.
type shapes struct {
	mu     sync.Mutex
	counts map[string]int
}

func (s *shapes) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		q := r.URL.Query()
		verb := "list"
		if q.Get("watch") == "true" {
			verb = "watch"
		}
		if r.Method == http.MethodGet && q.Get("continue") == "" && (verb == "watch" || strings.Count(r.URL.Path, "/") >= 3) {
			key := verb + " " + r.URL.Path
			if fs := q.Get("fieldSelector"); fs != "" {
				key += "?fieldSelector=" + fs
			}
			if strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadata") {
				key += " (metadata)"
			}
			s.mu.Lock()
			s.counts[key]++
			s.mu.Unlock()
		}
		return rt.RoundTrip(r)
	})
}

func (s *shapes) get(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[key]
}

func (s *shapes) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(s.counts)) {
		fmt.Fprintf(&b, "\n  %s: %d", k, s.counts[k])
	}
	return b.String()
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Every controller started together lists and watches each resource once
// for all of them: one list and one watch of all pods (not one per
// controller that reads pods), besides the scheduler's of pods not
// terminated and the garbage collector's of pods' metadata, which are
// other shapes.
func TestControllersShareOneListAndWatchPerResource(t *testing.T) {
	s := &shapes{counts: map[string]int{}}
	cfg := rest.CopyConfig(srv.RESTConfig())
	cfg.WrapTransport = s.wrap
	m, err := controllers.New(controllers.Options{Config: cfg, Names: controllers.All()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	idle, cancelIdle := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancelIdle()
	if err := m.WaitIdle(idle); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]int{
		"list /api/v1/pods":  1,
		"watch /api/v1/pods": 1,
		"list /api/v1/pods?fieldSelector=status.phase!=Succeeded,status.phase!=Failed":  1,
		"watch /api/v1/pods?fieldSelector=status.phase!=Succeeded,status.phase!=Failed": 1,
		"list /api/v1/pods (metadata)":   1,
		"watch /api/v1/pods (metadata)":  1,
		"list /api/v1/nodes":             1,
		"watch /api/v1/nodes":            1,
		"list /api/v1/namespaces":        1,
		"list /apis/apps/v1/replicasets": 1,
		"list /apis/batch/v1/jobs":       1,
		// The EndpointSlice and Endpoints controllers share Services.
		"list /api/v1/services": 1,
	} {
		if got := s.get(key); got != want {
			t.Errorf("%s: %d requests, want %d", key, got, want)
		}
	}
	if t.Failed() {
		t.Logf("requests:%s", s)
	}
}
