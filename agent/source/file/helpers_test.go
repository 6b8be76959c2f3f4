package file

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/kite-project/kite/agent/kubetypes"
)

const (
	nodeName = "node1"
	// waitTimeout is generous: the machine running the tests may be loaded.
	waitTimeout = 10 * time.Second
)

// manifestYAML is a pod manifest whose name and image vary.
func manifestYAML(name, image string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  containers:
  - name: main
    image: %s
`, name, image)
}

// writeAtomic writes a manifest as careful tools do: a dot-file (ignored),
// then a rename, so that no half-written file is ever read.
func writeAtomic(t testing.TB, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".partial")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// recorder collects reported problems.
type recorder struct {
	mu       sync.Mutex
	problems []kubetypes.Problem
}

func (r *recorder) ReportProblem(p kubetypes.Problem) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.problems = append(r.problems, p)
}

func (r *recorder) list() []kubetypes.Problem {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]kubetypes.Problem(nil), r.problems...)
}

// waitProblem waits for a problem with the reason about where.
func (r *recorder) waitProblem(t *testing.T, reason, where string) kubetypes.Problem {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		for _, p := range r.list() {
			if p.Reason == reason && p.Where == where {
				return p
			}
		}
		time.Sleep(10 * time.Millisecond) // polling, not synchronisation
	}
	t.Fatalf("no %s problem about %s; got %v", reason, where, r.list())
	return kubetypes.Problem{}
}

// runSource runs a file source until the test ends.
func runSource(t *testing.T, opts Options) (<-chan kubetypes.PodUpdate, *recorder) {
	t.Helper()
	rec := &recorder{}
	opts.Reporter = rec
	if opts.NodeName == "" {
		opts.NodeName = nodeName
	}
	s, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	_, logCtx := ktesting.NewTestContext(t) // logs go to the test's output
	ctx, cancel := context.WithCancel(logCtx)
	out := make(chan kubetypes.PodUpdate)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx, out)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return out, rec
}

// next returns the next update, failing after waitTimeout.
func next(t *testing.T, ch <-chan kubetypes.PodUpdate) kubetypes.PodUpdate {
	t.Helper()
	select {
	case u := <-ch:
		if u.Op != kubetypes.SET || u.Source != kubetypes.FileSource {
			t.Fatalf("got %s from %q, want SET from file", u.Op, u.Source)
		}
		return u
	case <-time.After(waitTimeout):
		t.Fatal("no update from the file source")
	}
	return kubetypes.PodUpdate{}
}

// quiet checks that no update comes for a short while. It can only miss an
// unwanted update, never fail a correct implementation.
func quiet(t *testing.T, ch <-chan kubetypes.PodUpdate, d time.Duration) {
	t.Helper()
	select {
	case u := <-ch:
		t.Fatalf("unexpected update: %s %s", u.Op, names(u.Pods))
	case <-time.After(d):
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
