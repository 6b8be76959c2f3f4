package mirror

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/listwatch"
)

// Retry defaults: a failed pass is tried again after a backoff that starts
// at DefaultRetryInitial and doubles up to DefaultRetryMax.
const (
	DefaultRetryInitial = 500 * time.Millisecond
	DefaultRetryMax     = 30 * time.Second
)

// API is the part of a core/v1 client the Reconciler calls;
// clientset.CoreV1() is one.
type API interface {
	corev1client.PodsGetter
	corev1client.NodesGetter
}

// Options configures a Reconciler.
type Options struct {
	// Client reaches the API server. Required.
	Client API
	// NodeName is the node whose static pods are mirrored; mirror pods are
	// owned by its Node object, which must exist for them to be created.
	NodeName string
	// RetryInitial and RetryMax bound the backoff after a failed pass;
	// zero means the defaults.
	RetryInitial, RetryMax time.Duration
}

// Reconciler makes the calls Decide asks for, each time its Input changes,
// and again after a backoff while calls fail. Set gives it the latest
// Input; Run does the work.
type Reconciler struct {
	opts Options

	// mu guards in; Set writes it, Run reads it.
	mu sync.Mutex
	in Input
	// changed holds a token when in changed since Run last read it.
	changed chan struct{}
	// lastNode and nodeRead are the Node as last read and when, owned by
	// Run: the passes of a burst of static pods share one read.
	lastNode *v1.Node
	nodeRead time.Time
}

// nodeMaxAge is how long a read of the Node serves the passes that
// create mirror pods: the kubelet reads it from its informer's cache,
// which lags the API by as much.
const nodeMaxAge = time.Second

// New checks opts and returns a Reconciler; Run starts it.
func New(opts Options) (*Reconciler, error) {
	if opts.Client == nil {
		return nil, errors.New("mirror pods: no API client given")
	}
	if opts.NodeName == "" {
		return nil, errors.New("mirror pods: no node name given")
	}
	if opts.RetryInitial < 0 || opts.RetryMax < 0 {
		return nil, fmt.Errorf("mirror pods of node %q: negative retry %v or %v", opts.NodeName, opts.RetryInitial, opts.RetryMax)
	}
	if opts.RetryInitial == 0 {
		opts.RetryInitial = DefaultRetryInitial
	}
	if opts.RetryMax == 0 {
		opts.RetryMax = DefaultRetryMax
	}
	return &Reconciler{opts: opts, changed: make(chan struct{}, 1)}, nil
}

// Set replaces the Input, and has Run decide again. It never blocks; the
// caller must not modify in's pods afterwards.
func (r *Reconciler) Set(in Input) {
	r.mu.Lock()
	r.in = in
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default: // a pass is already due; it will read this Input
	}
}

func (r *Reconciler) input() Input {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.in
}

// Run reconciles until ctx ends.
func (r *Reconciler) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("node", r.opts.NodeName)
	ctx = klog.NewContext(ctx, logger)
	backoff := listwatch.NewBackoff(listwatch.BackoffOptions{Initial: r.opts.RetryInitial, Max: r.opts.RetryMax})
	retry := time.NewTimer(0)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.changed:
		case <-retry.C:
		}
		retry.Stop()
		if err := r.apply(ctx, Decide(r.input())); err != nil {
			if ctx.Err() != nil {
				return
			}
			wait := backoff.Next()
			logger.Error(err, "Mirror pods not reconciled, retrying", "after", wait)
			retry.Reset(wait)
		}
	}
}

// apply makes the calls of actions: the deletes first, in order, then the
// creates, several at once (a directory of static pods is a burst of
// them). A Create whose Delete failed is skipped; the errors are joined.
func (r *Reconciler) apply(ctx context.Context, actions []Action) error {
	logger := klog.FromContext(ctx)
	var errs []error
	failedDelete := map[string]bool{}
	var creates []Action
	for _, a := range actions {
		key := a.Pod.Namespace + "/" + a.Pod.Name
		switch a.Op {
		case Delete:
			deleted, err := r.delete(ctx, a.Pod)
			if err != nil {
				failedDelete[key] = true
				errs = append(errs, err)
				continue
			}
			if deleted {
				logger.Info("Deleted mirror pod", "pod", klog.KObj(a.Pod), "uid", a.Pod.UID, "reason", a.Reason)
			}
		case Create:
			if !failedDelete[key] {
				creates = append(creates, a)
			}
		}
	}
	if len(creates) == 0 {
		return errors.Join(errs...)
	}
	node, err := r.node(ctx)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("create %d mirror pods: %w", len(creates), err))...)
	}
	if node.DeletionTimestamp != nil {
		// As upstream: a node being removed from the cluster gets no new
		// mirror pods.
		return errors.Join(errs...)
	}
	var mu sync.Mutex
	next := make(chan Action)
	var wg sync.WaitGroup
	for range min(createWorkers, len(creates)) {
		wg.Go(func() {
			for a := range next {
				created, err := r.create(ctx, a.Pod, node)
				switch {
				case err != nil:
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				case created:
					logger.Info("Created mirror pod", "pod", klog.KObj(a.Pod), "hash", Hash(a.Pod), "reason", a.Reason)
				}
			}
		})
	}
	for _, a := range creates {
		next <- a
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// createWorkers is how many mirror pods are created at once.
const createWorkers = 4

// node gets the Node object, whose UID mirror pods' ownerReference needs,
// read at most nodeMaxAge ago.
func (r *Reconciler) node(ctx context.Context) (*v1.Node, error) {
	if r.lastNode != nil && time.Since(r.nodeRead) < nodeMaxAge {
		return r.lastNode, nil
	}
	node, err := r.opts.Client.Nodes().Get(ctx, r.opts.NodeName, metav1.GetOptions{})
	if err != nil {
		r.lastNode = nil
		return nil, fmt.Errorf("get node %q for the mirror pods' owner: %w", r.opts.NodeName, err)
	}
	r.lastNode, r.nodeRead = node, time.Now()
	return node, nil
}

// create creates static's mirror. AlreadyExists is no error: the pod is
// either a mirror this Reconciler made and the api source has not
// reported yet, or one it will see and judge when it is reported.
func (r *Reconciler) create(ctx context.Context, static *v1.Pod, node *v1.Node) (bool, error) {
	mirror := NewMirrorPod(static, r.opts.NodeName, node.UID)
	_, err := r.opts.Client.Pods(mirror.Namespace).Create(ctx, mirror, metav1.CreateOptions{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsAlreadyExists(err):
		return false, nil
	default:
		return false, fmt.Errorf("create mirror pod %s/%s (hash %s): %w", mirror.Namespace, mirror.Name, Hash(static), err)
	}
}

// delete deletes mirror at once, only if it still has mirror's UID (so
// that a newer mirror created meanwhile is left alone). NotFound and a
// UID conflict mean it is already gone.
func (r *Reconciler) delete(ctx context.Context, mirror *v1.Pod) (bool, error) {
	zero := int64(0)
	uid := mirror.UID
	err := r.opts.Client.Pods(mirror.Namespace).Delete(ctx, mirror.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero,
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return false, nil
	}
	return false, fmt.Errorf("delete mirror pod %s/%s (uid %s): %w", mirror.Namespace, mirror.Name, uid, err)
}
