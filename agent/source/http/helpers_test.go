package http

import (
	"context"
	"fmt"
	nethttp "net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/agent/source/sourcetest"
)

const (
	nodeName = "node1"
	// waitTimeout is generous: the machine running the tests may be loaded.
	waitTimeout = 10 * time.Second
	// poll is the check frequency in tests: short, so that tests are quick.
	poll = 5 * time.Millisecond
)

func podJSON(name, image string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q},"spec":{"containers":[{"name":"main","image":%q}]}}`, name, image)
}

// server is a real HTTP server on 127.0.0.1 whose answer the test changes,
// and which tells the test about every request it gets.
type server struct {
	*httptest.Server
	mu       sync.Mutex
	handler  nethttp.HandlerFunc
	requests chan *nethttp.Request
}

func newServer(t *testing.T, h nethttp.HandlerFunc) *server {
	t.Helper()
	s := &server{handler: h, requests: make(chan *nethttp.Request, 1000)}
	s.Server = httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		s.requests <- r.Clone(context.Background())
		s.mu.Lock()
		h := s.handler
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) set(h nethttp.HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = h
}

// body answers with a fixed body.
func body(content string) nethttp.HandlerFunc {
	return func(w nethttp.ResponseWriter, r *nethttp.Request) { fmt.Fprint(w, content) }
}

// status answers with a status and no body.
func status(code int) nethttp.HandlerFunc {
	return func(w nethttp.ResponseWriter, r *nethttp.Request) { w.WriteHeader(code) }
}

// recorder collects reported problems.
type recorder struct{ sourcetest.Recorder }

func (r *recorder) list() []kubetypes.Problem { return r.List() }

func runSource(t *testing.T, opts Options) (<-chan kubetypes.PodUpdate, *recorder) {
	t.Helper()
	rec := &recorder{}
	opts.Reporter = rec
	opts.NodeName = nodeName
	if opts.CheckFrequency == 0 {
		opts.CheckFrequency = poll
	}
	s, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return sourcetest.Run(t, s), rec
}

// next returns the next update, failing after waitTimeout.
func next(t *testing.T, ch <-chan kubetypes.PodUpdate) kubetypes.PodUpdate {
	t.Helper()
	return sourcetest.Next(t, ch, kubetypes.HTTPSource, waitTimeout)
}

// noUpdateFor waits until the server has had n more requests and fails if
// an update comes meanwhile. Polls are sequential and a poll's update is
// sent before the next poll starts, so once request k+1 arrives, request k
// has given all it would: this proves "no update" without timing.
func noUpdateFor(t *testing.T, srv *server, ch <-chan kubetypes.PodUpdate, n int) []*nethttp.Request {
	t.Helper()
	var got []*nethttp.Request
	deadline := time.After(waitTimeout)
	for len(got) < n {
		select {
		case u := <-ch:
			t.Fatalf("unexpected update after %d requests: %s %s", len(got), u.Op, names(u.Pods))
		case r := <-srv.requests:
			got = append(got, r)
		case <-deadline:
			t.Fatalf("only %d of %d requests came", len(got), n)
		}
	}
	return got
}

// drainRequests forgets the requests counted so far.
func drainRequests(srv *server) {
	for {
		select {
		case <-srv.requests:
		default:
			return
		}
	}
}

// names renders pods as sorted "namespace/name:image".
func names(pods []*v1.Pod) string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name+":"+p.Spec.Containers[0].Image)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
