package workload

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// Scope is what each watcher of a fan-out watches.
type Scope int

const (
	// AllNamespaces watchers watch every pod of the cluster, as a
	// controller does; each expects every update.
	AllNamespaces Scope = iota
	// OneNode watchers watch spec.nodeName=X, as a kubelet does, watcher
	// i the i-th node round robin; each expects its node's updates.
	OneNode
)

func (s Scope) String() string {
	if s == OneNode {
		return "one node each"
	}
	return "all namespaces"
}

// maxRestarts is how often a watcher re-opens a watch that the server
// ended before the watcher had its events. A client resumes from the last
// resourceVersion it saw, so a correct server loses nothing across it.
const maxRestarts = 5

// FanOut opens opts.Watchers watches from the current resourceVersion, then
// updates opts.Updates distinct pods (spread over the nodes) from
// opts.Writers clients, and waits until every watcher has seen its events
// or opts.DeliveryTimeout has passed since the last update. Each watcher's
// events are checked with CheckDelivery; Result.Delivery sums them, and
// Lost must be 0. Ops counts delivered events, Rate is deliveries/s from
// the first update to the last receipt, and the percentiles are from an
// update's start to its receipt by a watcher. opts.Decode says how the
// watchers read their events; everything else is the same in both modes.
func FanOut(ctx context.Context, client kubernetes.Interface, opts Options, scope Scope) (Result, error) {
	opts, err := opts.ready()
	if err != nil {
		return Result{}, err
	}
	pods := client.CoreV1().Pods(opts.Namespace)
	t := fanOutTarget{
		watches: rawWatches{rest: client.CoreV1().RESTClient(), resource: "pods", protobuf: true},
		resourceVersion: func(ctx context.Context) (string, error) {
			list, err := pods.List(ctx, metav1.ListOptions{Limit: 1})
			if err != nil {
				return "", err
			}
			return list.ResourceVersion, nil
		},
		update: func(ctx context.Context, i int, patch []byte) (string, error) {
			p, err := pods.Patch(ctx, podName(i), types.MergePatchType, patch, metav1.PatchOptions{})
			if err != nil {
				return "", err
			}
			return p.ResourceVersion, nil
		},
	}
	if opts.Decode == ClientGoDecode {
		t.watches = typedWatches{client.CoreV1().Pods(metav1.NamespaceAll)}
	}
	return fanOut(ctx, t, opts, scope, "")
}

// fanOutTarget is what a fan-out updates and watches: pods, or the
// objects of a custom resource.
type fanOutTarget struct {
	watches watchOpener
	// resourceVersion is the current one, to watch from.
	resourceVersion func(ctx context.Context) (string, error)
	// update merge-patches object i of the namespace and returns the
	// resourceVersion the write got.
	update func(ctx context.Context, i int, patch []byte) (string, error)
}

// fanOut is FanOut over any target; what, when set, names the objects in
// the result ("watch fan-out of <what>, ...").
func fanOut(ctx context.Context, t fanOutTarget, opts Options, scope Scope, what string) (Result, error) {
	rv, err := t.resourceVersion(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("fan-out: resourceVersion to watch from: %w", err)
	}

	// Update k goes to pod k*Pods/Updates: distinct pods, spread over
	// the nodes.
	target := func(k int) int { return k * opts.Pods / opts.Updates }
	perNode := make([]int, opts.Nodes)
	for k := range opts.Updates {
		perNode[target(k)%opts.Nodes]++
	}
	watches := t.watches

	deliverCtx, stopDelivery := context.WithCancel(ctx)
	defer stopDelivery()
	watchers := make([]*watcher, opts.Watchers)
	var opened, done sync.WaitGroup
	openErrs := make([]error, opts.Watchers)
	for i := range watchers {
		w := &watcher{namespace: opts.Namespace, want: opts.Updates}
		lo := metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}
		if scope == OneNode {
			w.node = i % opts.Nodes
			w.want = perNode[w.node]
			lo.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", opts.nodeName(w.node)).String()
		}
		watchers[i] = w
		opened.Add(1)
		done.Go(func() {
			openErrs[i] = w.run(deliverCtx, watches, lo, opened.Done)
		})
	}
	opened.Wait()
	if err := errors.Join(openErrs...); err != nil {
		stopDelivery()
		done.Wait()
		return Result{}, fmt.Errorf("fan-out: open watches: %w", err)
	}

	written := make([]uint64, opts.Updates) // resourceVersion of update k
	start := time.Now()
	_, writes, err := parallel(ctx, opts.Updates, opts.Writers, func(ctx context.Context, k int) error {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, sentAnnotation, strconv.FormatInt(time.Now().UnixNano(), 10))
		rv, err := t.update(ctx, target(k), []byte(patch))
		if err != nil {
			return fmt.Errorf("update object %d: %w", target(k), err)
		}
		if written[k], err = strconv.ParseUint(rv, 10, 64); err != nil {
			return fmt.Errorf("update object %d: resourceVersion %q: %w", target(k), rv, err)
		}
		return nil
	})
	if err != nil {
		stopDelivery()
		done.Wait()
		return Result{}, fmt.Errorf("fan-out: %w", err)
	}
	timer := time.AfterFunc(opts.DeliveryTimeout, stopDelivery)
	done.Wait()
	timer.Stop()

	var total Delivery
	var lat latencies
	var last time.Time
	restarts := 0
	var ended error
	for _, w := range watchers {
		var expected []uint64
		for k, rv := range written {
			if scope == AllNamespaces || target(k)%opts.Nodes == w.node {
				expected = append(expected, rv)
			}
		}
		total.add(CheckDelivery(expected, w.received))
		lat = append(lat, w.latencies...)
		if w.last.After(last) {
			last = w.last
		}
		restarts += w.restarts
		if ended == nil {
			ended = w.ended
		}
	}
	delivered := total.Received - total.Duplicates - total.Unexpected
	name := "watch fan-out"
	if what != "" {
		name += " of " + what
	}
	r := Result{
		Name:     fmt.Sprintf("%s, %s (%d watchers)", name, scope, opts.Watchers),
		Ops:      delivered,
		Items:    opts.Updates,
		Duration: last.Sub(start),
		Rate:     rate(delivered, last.Sub(start)),
		Delivery: &total,
		Note: fmt.Sprintf("%d updates in %s; lost %d, duplicates %d, out of order %d",
			opts.Updates, duration(writes), total.Lost, total.Duplicates, total.OutOfOrder),
	}
	if restarts > 0 {
		r.Note += fmt.Sprintf("; %d watches re-opened (the first after: %v)", restarts, ended)
	}
	lat.fill(&r)
	return r, nil
}

// watcher is one watch of a fan-out and what it received.
type watcher struct {
	namespace string
	node      int
	want      int // distinct events to wait for

	received  []uint64 // resourceVersions of the updates seen, in order
	latencies latencies
	last      time.Time // receipt of the last update seen
	restarts  int
	ended     error // what ended the first watch that was re-opened
}

// run opens the watch, calls opened once it is open (or failed to), and
// records updates until it has want distinct ones or ctx ends. An error
// is returned only if the first open fails.
func (w *watcher) run(ctx context.Context, watches watchOpener, lo metav1.ListOptions, opened func()) error {
	s, err := watches.open(ctx, lo)
	opened()
	if err != nil {
		return err
	}
	defer func() { s.stop() }()
	distinct := make(map[uint64]bool, w.want)
	for len(distinct) < w.want {
		ev, err := s.next()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			// Closed, an ERROR event or a malformed event: resume from
			// the last resourceVersion seen, as a client does; a server
			// that cannot (410) shows up as lost events.
			s.stop()
			if w.ended == nil {
				w.ended = err
			}
			if w.restarts++; w.restarts > maxRestarts {
				return nil
			}
			next, err := watches.open(ctx, lo)
			if err != nil {
				return nil
			}
			s = next
			continue
		}
		lo.ResourceVersion = ev.rv
		if ev.typ != watch.Modified || ev.namespace != w.namespace || ev.sent == "" {
			continue
		}
		now := time.Now()
		rv, err := strconv.ParseUint(ev.rv, 10, 64)
		if err != nil {
			continue
		}
		if ns, err := strconv.ParseInt(ev.sent, 10, 64); err == nil {
			w.latencies = append(w.latencies, now.Sub(time.Unix(0, ns)))
		}
		w.received = append(w.received, rv)
		distinct[rv] = true
		w.last = now
	}
	return nil
}
