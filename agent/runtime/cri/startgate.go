package cri

import (
	"context"
	goruntime "runtime"
	"sync"
	"time"
)

// Starting a pod on containerd is CPU work outside the agent: a sandbox
// is a shim daemon started, a snapshot mounted, runc run twice for the
// pause container; a container start is runc run twice more. With many
// pods started at once (a node that comes back, a Deployment scaled up)
// every one of those processes competes for the node's few cores at the
// same moment, and each costs more CPU than when pods start a few at a
// time (bench/README.md, session 18: the burst's CPU per pod against the
// one-at-a-time phase's). So the runtime lets only a few of its start
// calls (RunPodSandbox, CreateContainer, StartContainer) into the runtime
// at once; every other call (status, lists, stops, removals, exec,
// probes) passes freely, and a start call waiting for its turn returns
// when its context ends: a pod being deleted is not held behind others'
// starts.
//
// A call that hangs in the runtime (a CNI plugin that never answers)
// gives its turn back after maxTurn, as if it had ended, so that a few
// such calls do not stop every other pod of the node from starting: the
// bound is then exceeded by the calls that hang, which the kubelet (no
// bound at all) would have in flight too.
//
// Waiting calls are let in first the containers' (CreateContainer,
// StartContainer) and then the sandboxes', each in arrival order: a pod
// whose sandbox is up finishes before another pod's sandbox begins, so
// pods become Running one after the other rather than all at the end.

// startGatePriority orders the waiting start calls.
type startGatePriority int

const (
	startContainer startGatePriority = iota // CreateContainer, StartContainer: a sandbox already runs
	startSandbox                            // RunPodSandbox: a new pod
	startPriorities
)

// maxTurn is how long a start call holds its turn at most: the kubelet's
// --runtime-request-timeout (2 min), after which its own CRI client gives
// up on a call.
var maxTurn = 2 * time.Minute

// startGate is a counting semaphore with a queue per priority. A nil
// *startGate lets every call in.
type startGate struct {
	mu     sync.Mutex
	free   int
	queues [startPriorities][]chan struct{} // closed when the waiter's turn comes
}

// newStartGate lets n calls in at once; nil (no bound) for n <= 0.
func newStartGate(n int) *startGate {
	if n <= 0 {
		return nil
	}
	return &startGate{free: n}
}

// enter waits for a turn and returns the function that ends it (the
// caller calls it when its call returns; it ends by itself after
// maxTurn); it returns ctx's error, holding nothing, when ctx ends first.
func (g *startGate) enter(ctx context.Context, p startGatePriority) (done func(), err error) {
	if err := g.acquire(ctx, p); err != nil {
		return nil, err
	}
	if g == nil {
		return func() {}, nil
	}
	var once sync.Once
	end := func() { once.Do(g.release) }
	t := time.AfterFunc(maxTurn, end)
	return func() {
		t.Stop()
		end()
	}, nil
}

// acquire waits for a turn; it returns ctx's error, holding nothing, when
// ctx ends first. Each successful acquire is paired with one release.
func (g *startGate) acquire(ctx context.Context, p startGatePriority) error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	if g.free > 0 && g.waiting() == 0 {
		g.free--
		g.mu.Unlock()
		return nil
	}
	turn := make(chan struct{})
	g.queues[p] = append(g.queues[p], turn)
	g.mu.Unlock()
	select {
	case <-turn:
		return nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	select {
	case <-turn:
		// The turn came as ctx ended: hand it on.
		g.mu.Unlock()
		g.release()
		return ctx.Err()
	default:
	}
	q := g.queues[p]
	for i, c := range q {
		if c == turn {
			g.queues[p] = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	g.mu.Unlock()
	return ctx.Err()
}

// release ends a turn: the first waiter of the highest priority gets it.
func (g *startGate) release() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for p := range g.queues {
		if q := g.queues[p]; len(q) > 0 {
			close(q[0])
			g.queues[p] = q[1:]
			return
		}
	}
	g.free++
}

func (g *startGate) waiting() int {
	n := 0
	for _, q := range g.queues {
		n += len(q)
	}
	return n
}

// DefaultMaxParallelStarts is the bound on start calls in the runtime at
// once when Options leave it zero: four per CPU. A pod started alone
// keeps about half a core busy (its calls wait on containerd's locks, the
// disk, the shim's socket), so fewer would leave cores idle on a quiet
// node; two per CPU saved a little more CPU in a burst but was slower
// when the node was shared (bench/README.md, session 18). The kite
// binary takes KITE_CRI_MAX_PARALLEL_STARTS (a number; 0 or less for no
// bound) into Options, for measuring.
func DefaultMaxParallelStarts() int {
	return 4 * goruntime.NumCPU()
}
