package file

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
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
type recorder struct{ sourcetest.Recorder }

func (r *recorder) list() []kubetypes.Problem { return r.List() }

// waitProblem waits for a problem with the reason about where.
func (r *recorder) waitProblem(t *testing.T, reason, where string) kubetypes.Problem {
	t.Helper()
	return r.WaitProblem(t, reason, where, waitTimeout)
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
	return sourcetest.Run(t, s), rec
}

// next returns the next update, failing after waitTimeout.
func next(t *testing.T, ch <-chan kubetypes.PodUpdate) kubetypes.PodUpdate {
	t.Helper()
	return sourcetest.Next(t, ch, kubetypes.FileSource, waitTimeout)
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
