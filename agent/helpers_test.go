package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"

	"github.com/kite-project/kite/agent/kubetypes"
)

// waitTimeout is generous: the machine running the tests may be loaded.
const waitTimeout = 20 * time.Second

func clientset(t testing.TB, cfg *rest.Config) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// unique returns base with a suffix of its own, so that tests run again
// (-count) against the shared server do not meet their earlier objects.
func unique(base string) string {
	return fmt.Sprintf("%s-%x", base, time.Now().UnixNano()&0xffffffffff)
}

// createNamespace creates a namespace named after base and returns its name.
func createNamespace(t testing.TB, cs kubernetes.Interface, base string) string {
	t.Helper()
	name := unique(base)
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

// registerNode creates the Node object mirror pods are owned by.
func createNode(t testing.TB, cs kubernetes.Interface, name string) *v1.Node {
	t.Helper()
	node, err := cs.CoreV1().Nodes().Create(context.Background(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("register node %s: %v", name, err)
	}
	return node
}

// newPod is a minimal valid pod; nodeName "" leaves it unbound.
func newPod(namespace, name, nodeName string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1.PodSpec{
			NodeName:   nodeName,
			Containers: []v1.Container{{Name: "main", Image: "image"}},
		},
	}
}

// manifest is a static pod manifest.
func manifest(name, image string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  containers:\n  - name: main\n    image: %s\n", name, image)
}

// writeAtomic writes a manifest through a dot-file and a rename.
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

// consumer records every operation an Agent emits.
type consumer struct {
	t    *testing.T
	mu   sync.Mutex
	ops  []kubetypes.PodUpdate
	done chan struct{}
	// stop ends the agent and waits for it; the test's cleanup calls it too.
	stop func()
}

// startAgent runs an Agent until the test ends and records its operations.
func startAgent(t *testing.T, opts Options) (*Agent, *consumer) {
	t.Helper()
	if opts.MirrorRetryInitial == 0 {
		opts.MirrorRetryInitial, opts.MirrorRetryMax = 50*time.Millisecond, 500*time.Millisecond
	}
	ops := make(chanSyncLoop, 64)
	opts.SyncLoop = ops
	a, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	_, logCtx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(logCtx)
	c := &consumer{t: t, done: make(chan struct{})}
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		a.Run(ctx)
	}()
	go func() {
		defer close(c.done)
		for u := range ops {
			c.mu.Lock()
			c.ops = append(c.ops, u)
			c.mu.Unlock()
		}
	}()
	var once sync.Once
	c.stop = func() {
		once.Do(func() {
			cancel()
			<-ran
			<-c.done
		})
	}
	t.Cleanup(c.stop)
	return a, c
}

// describe renders an operation as "OP source ns/name,ns/name".
func describe(u kubetypes.PodUpdate) string {
	names := make([]string, 0, len(u.Pods))
	for _, p := range u.Pods {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	return fmt.Sprintf("%s %s %s", u.Op, u.Source, strings.Join(names, ","))
}

func (c *consumer) all() []kubetypes.PodUpdate {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]kubetypes.PodUpdate(nil), c.ops...)
}

// wait returns the pod of the first operation, from the from-th on, of
// op and source that holds a pod namespace/name, and that operation's
// index; key "" waits for an operation without pods (a source's first
// report). It fails the test after waitTimeout.
func (c *consumer) wait(from int, op kubetypes.Op, source, key string) (*v1.Pod, int) {
	c.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		ops := c.all()
		for i := from; i < len(ops); i++ {
			if ops[i].Op != op || ops[i].Source != source {
				continue
			}
			if key == "" && len(ops[i].Pods) == 0 {
				return nil, i
			}
			for _, p := range ops[i].Pods {
				if p.Namespace+"/"+p.Name == key {
					return p, i
				}
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no %s %s of %s within %v; got %v", op, source, key, waitTimeout, c.describeAll())
		}
		time.Sleep(5 * time.Millisecond) // polling, not synchronisation
	}
}

func (c *consumer) describeAll() []string {
	var out []string
	for _, u := range c.all() {
		out = append(out, describe(u))
	}
	return out
}

// none fails the test if an operation matches bad.
func (c *consumer) none(what string, bad func(u kubetypes.PodUpdate, p *v1.Pod) bool) {
	c.t.Helper()
	for _, u := range c.all() {
		for _, p := range u.Pods {
			if bad(u, p) {
				c.t.Fatalf("%s: %s; all operations: %v", what, describe(u), c.describeAll())
			}
		}
	}
}

// waitAPIPod polls the API until pod namespace/name satisfies ok (it is
// nil when the pod does not exist) and returns it.
func waitAPIPod(t *testing.T, cs kubernetes.Interface, namespace, name, what string, ok func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		p, err := cs.CoreV1().Pods(namespace).Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			p, err = nil, nil
		}
		if err != nil {
			t.Fatalf("get %s/%s: %v", namespace, name, err)
		}
		if ok(p) {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; pod is %+v", what, waitTimeout, p)
		}
		time.Sleep(20 * time.Millisecond) // polling, not synchronisation
	}
}

// chanSyncLoop is a SyncLoop that hands every operation on, closing itself
// once the agent closes its operations.
type chanSyncLoop chan kubetypes.PodUpdate

func (c chanSyncLoop) Run(_ context.Context, updates <-chan kubetypes.PodUpdate, _ SourcesSeen) {
	defer close(c)
	for u := range updates {
		c <- u
	}
}
