package cri

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent"
	"github.com/kite-project/kite/agent/runtime/cri"
	"github.com/kite-project/kite/agent/runtime/cri/critest"
)

// startObserver sees the agent's start calls (RunPodSandbox,
// CreateContainer, StartContainer) as they reach containerd, on the wire:
// how many are in flight at most, the sandboxes asked for by pod name,
// and it holds the RunPodSandbox of the pod named hold until release is
// closed.
type startObserver struct {
	hold    string
	held    chan struct{} // closed when the held call has arrived
	release chan struct{}

	mu        sync.Mutex
	inFlight  int
	most      int
	sandboxes map[string]int
}

func newStartObserver(hold string) *startObserver {
	return &startObserver{hold: hold, held: make(chan struct{}), release: make(chan struct{}), sandboxes: map[string]int{}}
}

func (o *startObserver) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if !strings.HasSuffix(method, "/RunPodSandbox") && !strings.HasSuffix(method, "/CreateContainer") && !strings.HasSuffix(method, "/StartContainer") {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	o.mu.Lock()
	o.inFlight++
	o.most = max(o.most, o.inFlight)
	sb, isSandbox := req.(*runtimeapi.RunPodSandboxRequest)
	if isSandbox {
		o.sandboxes[sb.GetConfig().GetMetadata().GetName()]++
	}
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		o.inFlight--
		o.mu.Unlock()
	}()
	if isSandbox && o.hold != "" && sb.GetConfig().GetMetadata().GetName() == o.hold {
		close(o.held)
		select {
		case <-o.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (o *startObserver) counts() (most int, sandboxes map[string]int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	sandboxes = map[string]int{}
	for k, v := range o.sandboxes {
		sandboxes[k] = v
	}
	return o.most, sandboxes
}

// startGateAgent is an agent over a connection of its own to the
// package's containerd whose start calls are bounded by n and seen by o.
func startGateAgent(t *testing.T, node string, n int, o *startObserver) *testAgent {
	rt := critest.Connect(t, cri.Options{MaxParallelStarts: n, DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(o.intercept)}})
	return startAgentWith(t, node, t.TempDir(), func(opts *agent.Options) { opts.Runtime = rt })
}

func sleeper(p *v1.Pod) {
	p.Spec.Containers[0].Args = []string{"sleep", "3600"}
	p.Spec.Containers[0].ImagePullPolicy = v1.PullNever
}

// TestPodsStartedAtOnceReachTheRuntimeAFewAtATime: pods created at once
// all run, but no more than MaxParallelStarts of their start calls are in
// containerd at any moment (bench/README.md, session 18: 110 pods started
// at once cost containerd and runc more CPU per pod than a few at a time).
func TestPodsStartedAtOnceReachTheRuntimeAFewAtATime(t *testing.T) {
	const bound, n = 2, 6
	o := newStartObserver("")
	a := startGateAgent(t, "start-gate", bound, o)
	var pods []*v1.Pod
	for i := range n {
		pods = append(pods, a.pod(t, fmt.Sprintf("gate-%d", i), sleeper))
	}
	for _, p := range pods {
		a.wait(t, p, "Running", running)
	}
	most, sandboxes := o.counts()
	if most > bound {
		t.Errorf("%d start calls were in containerd at once, want at most %d", most, bound)
	}
	if len(sandboxes) != n {
		t.Errorf("sandboxes asked for: %v, want one for each of the %d pods", sandboxes, n)
	}
	t.Logf("at most %d start calls at once for %d pods", most, n)
}

// TestAPodWaitingForItsStartTurnIsDeleted: a pod whose sandbox waits
// behind another pod's start (the bound is one, and that start is held)
// is still deleted: its sync's wait ends with the deletion, it never
// reaches containerd, and the pod ahead of it runs once let go.
func TestAPodWaitingForItsStartTurnIsDeleted(t *testing.T) {
	o := newStartObserver("ahead")
	a := startGateAgent(t, "start-gate-delete", 1, o)
	ahead := a.pod(t, "ahead", sleeper)
	select {
	case <-o.held:
	case <-time.After(90 * time.Second):
		t.Fatal("the first pod's sandbox was not asked for")
	}
	behind := a.pod(t, "behind", sleeper)
	// Its worker has synced it once (the status of a pod without a
	// sandbox) and is on its way to the sandbox, which waits for the turn.
	a.wait(t, behind, "ContainerCreating", waiting("ContainerCreating"))
	// A graceful deletion: the API server keeps the pod until the agent
	// reports it terminated.
	if err := a.cs.CoreV1().Pods(behind.Namespace).Delete(context.Background(), behind.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := a.cs.CoreV1().Pods(behind.Namespace).Get(context.Background(), behind.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s not deleted within 60 s while the start ahead of it was held (last error %v)", behind.Name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, sandboxes := o.counts(); sandboxes["behind"] != 0 {
		t.Errorf("the deleted pod's sandbox reached containerd %d times, want 0: it was deleted while waiting", sandboxes["behind"])
	}
	close(o.release)
	a.wait(t, ahead, "Running", running)
}
