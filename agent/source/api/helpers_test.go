package api

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"

	"github.com/kite-project/kite/agent/kubetypes"
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

// createNamespace creates a namespace for the test.
func createNamespace(t testing.TB, cs kubernetes.Interface, name string) {
	t.Helper()
	_, err := cs.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

// snapshots is what a source sent, read from its channel.
type snapshots struct {
	t  *testing.T
	ch chan kubetypes.PodUpdate
}

// runSource runs an api source for node against the server behind cfg
// until the test ends.
func runSource(t *testing.T, cfg *rest.Config, node string) *snapshots {
	t.Helper()
	s, err := New(Options{Client: clientset(t, cfg).CoreV1().RESTClient(), NodeName: node})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	_, logCtx := ktesting.NewTestContext(t)
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
	return &snapshots{t: t, ch: out}
}

// next returns the next update, failing the test after waitTimeout.
func (s *snapshots) next() kubetypes.PodUpdate {
	s.t.Helper()
	select {
	case u := <-s.ch:
		if u.Op != kubetypes.SET || u.Source != kubetypes.APISource {
			s.t.Fatalf("got %s from %q, want SET from %q", u.Op, u.Source, kubetypes.APISource)
		}
		return u
	case <-time.After(waitTimeout):
		s.t.Fatalf("no update within %v", waitTimeout)
		return kubetypes.PodUpdate{}
	}
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

// expect reads the next update and checks that it holds exactly want
// ("namespace/name"), in any order.
func (s *snapshots) expect(want ...string) kubetypes.PodUpdate {
	s.t.Helper()
	u := s.next()
	slices.Sort(want)
	if got := names(u.Pods); !slices.Equal(got, want) {
		s.t.Fatalf("SET of [%s], want [%s]", strings.Join(got, " "), strings.Join(want, " "))
	}
	return u
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
