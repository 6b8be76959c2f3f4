package cri

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/klog/v2/ktesting"

	"github.com/kite-project/kite/agent"
	"github.com/kite-project/kite/agent/imagegc"
	"github.com/kite-project/kite/agent/node"
	"github.com/kite-project/kite/agent/runtime/cri/critest"
)

// testAgent is an agent on a node of its own over the package's
// containerd.
type testAgent struct {
	node, root string
	cs         kubernetes.Interface
	stop       func()
}

// startAgent runs an agent for node over the package's containerd, with
// root as its --root-dir, until stop or the test's end.
func startAgent(t testing.TB, nodeName, root string) *testAgent {
	t.Helper()
	return startAgentWith(t, nodeName, root, func(o *agent.Options) { o.ContainerRuntimeEndpoint = critest.Runtime(t).Endpoint() })
}

// startAgentWith is startAgent with the runtime options set by runtime.
func startAgentWith(t testing.TB, nodeName, root string, runtime func(*agent.Options)) *testAgent {
	t.Helper()
	opts := agent.Options{
		NodeName:      nodeName,
		RESTConfig:    shared.RESTConfig(),
		RootDir:       root,
		ServerAddress: "127.0.0.1",
		// The disk signals off, as kind's nodes run: the pods must not
		// depend on how full the test machine's disk is.
		Node: node.Options{NodeIP: net.ParseIP("127.0.0.1"), UpdateInterval: 500 * time.Millisecond, EvictionHard: node.Thresholds{}},
		// The package's containerd is shared: no agent's collector may
		// take another test's images, whatever the disk's use.
		ImageGC: &imagegc.Policy{HighThresholdPercent: 100, LowThresholdPercent: 100},
	}
	runtime(&opts)
	a, err := agent.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.Run(ctx)
	}()
	var once sync.Once
	ta := &testAgent{node: nodeName, root: root, cs: kubernetes.NewForConfigOrDie(shared.RESTConfig())}
	ta.stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(ta.stop)
	return ta
}

// pod creates a busybox pod on the agent's node in a namespace of its own.
func (a *testAgent) pod(t *testing.T, name string, mutate func(*v1.Pod)) *v1.Pod {
	t.Helper()
	ns := strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	if len(ns) > 60 {
		ns = ns[:60]
	}
	if _, err := a.cs.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	grace := int64(5)
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.PodSpec{
		NodeName: a.node, TerminationGracePeriodSeconds: &grace,
		Containers: []v1.Container{{Name: "main", Image: critest.BusyBox}},
	}}
	if mutate != nil {
		mutate(p)
	}
	p, err := a.cs.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		a.cs.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	return p
}

// wait polls the pod until cond holds, and returns it.
func (a *testAgent) wait(t *testing.T, p *v1.Pod, what string, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var last *v1.Pod
	for time.Now().Before(deadline) {
		got, err := a.cs.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
		if err == nil {
			last = got
			if cond(got) {
				return got
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if last != nil {
		t.Fatalf("pod %s/%s: timed out waiting for %s; status: %+v", p.Namespace, p.Name, what, last.Status)
	}
	t.Fatalf("pod %s/%s: timed out waiting for %s", p.Namespace, p.Name, what)
	return nil
}

func running(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodRunning && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Running != nil
}

func waiting(reason string) func(*v1.Pod) bool {
	return func(p *v1.Pod) bool {
		return len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
			p.Status.ContainerStatuses[0].State.Waiting.Reason == reason
	}
}

// events are the messages of the pod's events of reason.
func (a *testAgent) events(t *testing.T, p *v1.Pod, reason string) []string {
	t.Helper()
	list, err := a.cs.CoreV1().Events(p.Namespace).List(context.Background(), metav1.ListOptions{})
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

// waitEvent waits for an event of reason whose message contains substr.
func (a *testAgent) waitEvent(t *testing.T, p *v1.Pod, reason, substr string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		for _, m := range a.events(t, p, reason) {
			if strings.Contains(m, substr) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no event %s containing %q on pod %s; its %s events: %q", reason, substr, p.Name, reason, a.events(t, p, reason))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// exec runs cmd in the pod's container through the API server (SPDY), as
// kubectl exec does.
func (a *testAgent) exec(t *testing.T, p *v1.Pod, cmd ...string) (string, error) {
	t.Helper()
	u := a.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(p.Namespace).Name(p.Name).SubResource("exec").
		VersionedParams(&v1.PodExecOptions{Container: p.Spec.Containers[0].Name, Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec).URL()
	ex, err := remotecommand.NewWebSocketExecutor(shared.RESTConfig(), "GET", u.String())
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err = ex.StreamWithContext(t.Context(), remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut})
	return out.String() + errOut.String(), err
}

func timeAfter(ms int) <-chan time.Time { return time.After(time.Duration(ms) * time.Millisecond) }

// waitNode polls the agent's Node until cond holds.
func waitNode(t *testing.T, a *testAgent, cond func(*v1.Node) bool) *v1.Node {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := a.cs.CoreV1().Nodes().Get(context.Background(), a.node, metav1.GetOptions{})
		if err == nil && cond(n) {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s: timed out; last %v, %v", a.node, n, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
