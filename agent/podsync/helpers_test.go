package podsync

import (
	"context"
	"os/exec"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite/agent/config"
	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/agent/nodeevents"
	"github.com/kite-project/kite/agent/runtime/process"
	"github.com/kite-project/kite/agent/source/api"
)

// node is one agent under test: the api source and the merge feeding a
// Manager over a real process runtime, for its own node name.
type node struct {
	name string
	cs   kubernetes.Interface
	root string
	rt   *process.Runtime
	// input takes SETs of the file source (static pods), as the file
	// source sends them to the merge.
	input  chan<- kubetypes.PodUpdate
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startNode runs an agent for node name until the test ends. It needs
// /bin/sh; the runtime's cgroups and mount namespaces are optional.
func startNode(t *testing.T, name string, opts Options) *node {
	return startNodeAt(t, name, t.TempDir(), opts)
}

// startNodeAt runs an agent whose --root-dir is root (an agent started
// again over the root of one stopped finds its containers there).
func startNodeAt(t *testing.T, name, root string, opts Options) *node {
	return startNodeWith(t, name, root, shared.RESTConfig(), opts)
}

// startNodeWith runs an agent against the API server of cfg.
func startNodeWith(t *testing.T, name, root string, cfg *rest.Config, opts Options) *node {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("needs sh")
	}
	n := &node{name: name, cs: kubernetes.NewForConfigOrDie(cfg), root: root}
	rt, err := process.New(process.Options{RootDir: n.root + "/runtime", NoCgroups: true})
	if err != nil {
		t.Fatal(err)
	}
	src, err := api.New(api.Options{Client: n.cs.CoreV1().RESTClient(), NodeName: name})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := config.New(config.Options{Sources: []string{kubetypes.FileSource, kubetypes.APISource}})
	if err != nil {
		t.Fatal(err)
	}
	events, err := nodeevents.New(nodeevents.Options{Client: n.cs.CoreV1(), NodeName: name})
	if err != nil {
		t.Fatal(err)
	}
	opts.NodeName, opts.Runtime, opts.RootDir, opts.Client, opts.Events = name, rt, n.root, n.cs, events
	opts.HostIPs = []string{"127.0.0.1"}
	opts.SeenAllSources = pc.SeenAllSources
	if opts.StatusSyncPeriod == 0 {
		opts.StatusSyncPeriod = 500 * time.Millisecond
	}
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	n.rt, n.input = rt, pc.Input()
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.wg.Go(func() { pc.Run(ctx) })
	n.wg.Go(func() { src.Run(ctx, pc.Input()) })
	n.wg.Go(func() { events.Run(ctx) })
	n.wg.Go(func() { m.Run(ctx, pc.Updates()) })
	n.setStatic(t) // no static pods
	t.Cleanup(func() {
		n.stop()
		// The agent leaves pods running when it stops; the test's do not
		// outlive it.
		stopAll(rt)
	})
	return n
}

// stop stops the agent as SIGTERM does: its goroutines end, its
// containers keep running.
func (n *node) stop() {
	n.cancel()
	n.wg.Wait()
}

// stopAll stops every container the runtime has, with a fresh context.
func stopAll(rt *process.Runtime) {
	ctx := context.Background()
	list, _ := rt.ListPodSandbox(ctx, nil)
	for _, s := range list {
		rt.StopPodSandbox(ctx, s.Id)
		rt.RemovePodSandbox(ctx, s.Id)
	}
}

func (n *node) namespace(t *testing.T, ns string) {
	t.Helper()
	if _, err := n.cs.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// create makes a pod bound to the node running script with sh -c.
func (n *node) create(t *testing.T, ns, name string, policy v1.RestartPolicy, script string, mutate func(*v1.Pod)) *v1.Pod {
	t.Helper()
	n.namespace(t, ns)
	grace := int64(5)
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.PodSpec{
		NodeName: n.name, RestartPolicy: policy, TerminationGracePeriodSeconds: &grace,
		Containers: []v1.Container{{Name: "main", Image: "busybox", Command: []string{"sh", "-c", script}}},
	}}
	if mutate != nil {
		mutate(p)
	}
	p, err := n.cs.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitPod polls the pod until cond holds, and returns it.
func (n *node) waitPod(t *testing.T, p *v1.Pod, what string, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last *v1.Pod
	for time.Now().Before(deadline) {
		got, err := n.cs.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
		if err == nil {
			last = got
			if cond(got) {
				return got
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if last != nil {
		t.Fatalf("pod %s/%s: timed out waiting for %s; status: %+v", p.Namespace, p.Name, what, last.Status)
	}
	t.Fatalf("pod %s/%s: timed out waiting for %s", p.Namespace, p.Name, what)
	return nil
}

func condition(p *v1.Pod, t v1.PodConditionType) v1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// messages are the messages of the pod's events of reason.
func (n *node) messages(t *testing.T, p *v1.Pod, reason string) []string {
	t.Helper()
	list, err := n.cs.CoreV1().Events(p.Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.UID == p.UID && e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}

// waitEvent waits for an event of reason on the pod (with message, if
// not empty): events are written asynchronously.
func (n *node) waitEvent(t *testing.T, p *v1.Pod, reason, message string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, m := range n.messages(t, p, reason) {
			if message == "" || m == message {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no event %s %q on pod %s; its %s events: %q", reason, message, p.Name, reason, n.messages(t, p, reason))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// setStatic sends the file source's complete set of static pods.
func (n *node) setStatic(t *testing.T, pods ...*v1.Pod) {
	t.Helper()
	select {
	case n.input <- kubetypes.PodUpdate{Op: kubetypes.SET, Source: kubetypes.FileSource, Pods: pods}:
	case <-time.After(10 * time.Second):
		t.Fatal("the merge did not take the file source's update")
	}
}

// staticPod is a static pod as the file source makes it: its UID is its
// config hash.
func (n *node) staticPod(name, uid, script string) *v1.Pod {
	grace := int64(5)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-" + n.name, Namespace: "kube-system", UID: types.UID(uid),
			Annotations: map[string]string{kubetypes.ConfigSourceAnnotationKey: kubetypes.FileSource, kubetypes.ConfigHashAnnotationKey: uid}},
		Spec: v1.PodSpec{NodeName: n.name, RestartPolicy: v1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "main", Image: "busybox", Command: []string{"sh", "-c", script}}}},
	}
}
