package api

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/agent/source/sourcetest"
)

// waitTimeout is generous: the machine running the tests may be loaded.
const waitTimeout = 20 * time.Second

// clientset returns a client of the server behind cfg.
func clientset(t testing.TB, cfg *rest.Config) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// newPod is a minimal valid pod; nodeName "" leaves it unbound.
func newPod(namespace, name, nodeName, image string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1.PodSpec{
			NodeName:   nodeName,
			Containers: []v1.Container{{Name: "main", Image: image}},
		},
	}
}

// unique returns base with a suffix of its own, so that tests run again
// (-count) against the shared server do not meet their earlier objects.
func unique(base string) string {
	return fmt.Sprintf("%s-%x", base, time.Now().UnixNano()&0xffffffffff)
}

// createNamespace creates a namespace named after base for the test and
// returns its name.
func createNamespace(t testing.TB, cs kubernetes.Interface, base string) string {
	t.Helper()
	name := unique(base)
	_, err := cs.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

// snapshots is what a source sent, read from its channel.
type snapshots struct {
	t  *testing.T
	ch <-chan kubetypes.PodUpdate
	// history holds the names of every SET read, in order.
	history [][]string
}

// runSource runs an api source for node against the server behind cfg
// until the test ends.
func runSource(t *testing.T, cfg *rest.Config, node string) *snapshots {
	t.Helper()
	s, err := New(Options{Client: clientset(t, cfg).CoreV1().RESTClient(), NodeName: node})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &snapshots{t: t, ch: sourcetest.Run(t, s)}
}

// names lists "namespace/name" of pods, sorted.
func names(pods []*v1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	slices.Sort(out)
	return out
}

// expect reads updates until one holds exactly want ("namespace/name"),
// in any order, and returns it. Earlier ones may differ: a list at
// resourceVersion "0" may be served by a watch cache a little behind, and
// the watch then brings the rest.
func (s *snapshots) expect(want ...string) kubetypes.PodUpdate {
	s.t.Helper()
	slices.Sort(want)
	var seen []string
	deadline := time.After(waitTimeout)
	for {
		select {
		case u := <-s.ch:
			if u.Op != kubetypes.SET || u.Source != kubetypes.APISource {
				s.t.Fatalf("got %s from %q, want SET from %q", u.Op, u.Source, kubetypes.APISource)
			}
			got := names(u.Pods)
			s.history = append(s.history, got)
			if slices.Equal(got, want) {
				return u
			}
			seen = append(seen, "["+strings.Join(got, " ")+"]")
		case <-deadline:
			s.t.Fatalf("no SET of [%s] within %v; got %v", strings.Join(want, " "), waitTimeout, seen)
			return kubetypes.PodUpdate{}
		}
	}
}

// quiet checks that nothing is sent for a while.
func (s *snapshots) quiet(d time.Duration) {
	s.t.Helper()
	select {
	case u := <-s.ch:
		s.t.Fatalf("unexpected %s of %v", u.Op, names(u.Pods))
	case <-time.After(d):
	}
}

// find returns the pod named namespace/name in u, or nil.
func find(u kubetypes.PodUpdate, key string) *v1.Pod {
	for _, p := range u.Pods {
		if p.Namespace+"/"+p.Name == key {
			return p
		}
	}
	return nil
}
