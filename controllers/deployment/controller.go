// Package deployment rolls Deployments out through ReplicaSets: the job of
// kube-controller-manager's deployment controller.
//
// Each template gets a ReplicaSet named <deployment>-<pod-template-hash>
// (the hash as upstream computes it, so names match a real cluster's),
// with the revision annotation one above the highest old one. RollingUpdate
// grows the new ReplicaSet within maxSurge and shrinks old ones while
// replicas-maxUnavailable stay available (ScaleDownOld); Recreate scales
// the old ones to 0, waits for their pods to go, then scales the new one
// up. A change of replicas alone scales proportionally. Old ReplicaSets
// beyond revisionHistoryLimit are deleted once empty. Status carries the
// Available and Progressing conditions with upstream's reasons, so kubectl
// rollout status ends as on a real cluster; a paused Deployment is scaled
// but not rolled.
package deployment

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/events"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

const namespaceIndex = informer.NamespaceIndex

var kind = appsv1.SchemeGroupVersion.WithKind("Deployment")

// Options configure a Controller.
type Options struct {
	// Client watches Deployments, ReplicaSets and pods and writes the
	// first two. Required.
	Client kubernetes.Interface
	// Informers shares caches with the other controllers of the process;
	// nil means caches of the controller's own.
	Informers *informer.Factory
	// Workers sync Deployments in parallel; 0 means 5.
	Workers int
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Controller is the Deployment controller. Run drives it.
type Controller struct {
	client   kubernetes.Interface
	now      func() time.Time
	loop     *controller.Loop[string]
	queue    *workqueue.Queue[string]
	recorder *events.Recorder
	deploys  *informer.Informer[*appsv1.Deployment]
	sets     *informer.Informer[*appsv1.ReplicaSet]
	pods     *informer.Informer[*corev1.Pod]
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("deployment controller: Client is required")
	}
	if opts.Workers <= 0 {
		opts.Workers = 5
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Controller{client: opts.Client, now: opts.Now, queue: workqueue.New[string](workqueue.Options{}),
		recorder: events.New(events.Options{Client: opts.Client, Component: "deployment-controller"})}
	var err error
	c.deploys, err = informer.For(opts.Informers, informer.Options[*appsv1.Deployment]{
		Name: "deployments", Shape: informer.Shape{Resource: "deployments.apps"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.AppsV1().Deployments(""), nil),
		Indexers:      map[string]listwatch.IndexFunc[*appsv1.Deployment]{namespaceIndex: informer.ByNamespace[*appsv1.Deployment]},
		Handlers: informer.Handlers[*appsv1.Deployment]{
			OnAdd:    func(d *appsv1.Deployment) { c.queue.Add(key(d)) },
			OnUpdate: func(_, d *appsv1.Deployment) { c.queue.Add(key(d)) },
			OnDelete: func(d *appsv1.Deployment) { c.queue.Add(key(d)) },
		},
	})
	if err != nil {
		return nil, err
	}
	c.sets, err = informer.For(opts.Informers, informer.Options[*appsv1.ReplicaSet]{
		Name: "replicasets", Shape: informer.Shape{Resource: "replicasets.apps"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.AppsV1().ReplicaSets(""), nil),
		Indexers:      map[string]listwatch.IndexFunc[*appsv1.ReplicaSet]{namespaceIndex: informer.ByNamespace[*appsv1.ReplicaSet]},
		Handlers: informer.Handlers[*appsv1.ReplicaSet]{
			OnAdd:    c.rsChanged,
			OnUpdate: func(old, rs *appsv1.ReplicaSet) { c.rsChanged(old); c.rsChanged(rs) },
			OnDelete: c.rsChanged,
		},
	})
	if err != nil {
		return nil, err
	}
	c.pods, err = informer.For(opts.Informers, informer.Options[*corev1.Pod]{
		Name: "pods", Shape: informer.Shape{Resource: "pods"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Pods(""), nil),
		Handlers:      informer.Handlers[*corev1.Pod]{OnDelete: c.podDeleted},
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[string]{Name: "deployment-controller", Queue: c.queue, Informers: []controller.Informer{c.deploys, c.sets, c.pods},
		Recorder: c.recorder, Workers: opts.Workers, Sync: c.sync}
	return c, nil
}

var key = controller.Key

// Run syncs Deployments until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once the caches are listed and nothing is queued.
func (c *Controller) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

func (c *Controller) rsChanged(rs *appsv1.ReplicaSet) {
	if ref := metav1.GetControllerOf(rs); ref != nil {
		if ref.Kind == kind.Kind && ref.APIVersion == kind.GroupVersion().String() {
			c.queue.Add(rs.Namespace + "/" + ref.Name)
		}
		return
	}
	deploys, _ := c.deploys.Store().ByIndex(namespaceIndex, rs.Namespace)
	for _, d := range controller.Selecting(deploys, func(d *appsv1.Deployment) *metav1.LabelSelector { return d.Spec.Selector }, rs.Labels) {
		c.queue.Add(key(d))
	}
}

// podDeleted wakes a Recreate Deployment waiting for its old pods to go.
func (c *Controller) podDeleted(p *corev1.Pod) {
	ref := metav1.GetControllerOf(p)
	if ref == nil || ref.Kind != "ReplicaSet" {
		return
	}
	if rs, ok := c.sets.Store().Get(p.Namespace + "/" + ref.Name); ok {
		c.rsChanged(rs)
	}
}

func (c *Controller) sync(ctx context.Context, k string) error {
	cached, ok := c.deploys.Store().Get(k)
	if !ok {
		return nil
	}
	d := cached.DeepCopy()
	if sel := d.Spec.Selector; sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		c.recorder.Event(d, kind.Kind, corev1.EventTypeWarning, "SelectingAll", "This deployment is selecting all pods. A non-empty selector is required.")
		if d.Status.ObservedGeneration < d.Generation {
			d.Status.ObservedGeneration = d.Generation
			_, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
			return ignoreGone(err)
		}
		return nil
	}
	sets, err := c.claim(ctx, d)
	if err != nil {
		return err
	}
	if d.DeletionTimestamp != nil {
		newRS, old := c.split(d, sets)
		return c.writeStatus(ctx, d, Status(d, append(old, newRS), newRS, c.now()))
	}
	if err := c.pausedCondition(ctx, d); err != nil {
		return err
	}
	if d.Spec.Paused || c.scalingEvent(d, sets) {
		return c.scaleOnly(ctx, d, sets)
	}
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return c.recreate(ctx, d, sets)
	}
	return c.rollingUpdate(ctx, d, sets)
}

// claim returns the ReplicaSets d controls, adopting orphans its selector
// matches and releasing those it no longer matches.
func (c *Controller) claim(ctx context.Context, d *appsv1.Deployment) ([]*appsv1.ReplicaSet, error) {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, nil
	}
	all, _ := c.sets.Store().ByIndex(namespaceIndex, d.Namespace)
	claimer := &controller.Claimer[*appsv1.ReplicaSet]{Owner: d, Kind: kind, Selector: sel, Client: c.client.AppsV1().ReplicaSets(d.Namespace),
		Fresh: func(ctx context.Context) (metav1.Object, error) {
			return c.client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		}}
	return claimer.Claim(ctx, all)
}

// split returns the new ReplicaSet (the oldest whose template is the
// Deployment's) and the others.
func (c *Controller) split(d *appsv1.Deployment, sets []*appsv1.ReplicaSet) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet) {
	sorted := slices.Clone(sets)
	sort.SliceStable(sorted, func(i, j int) bool { return olderRS(sorted[i], sorted[j]) })
	var newRS *appsv1.ReplicaSet
	var old []*appsv1.ReplicaSet
	for _, rs := range sorted {
		if newRS == nil && EqualIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			newRS = rs
			continue
		}
		old = append(old, rs)
	}
	return newRS, old
}

// scalingEvent: some active ReplicaSet was sized for another replicas
// count than the Deployment's.
func (c *Controller) scalingEvent(d *appsv1.Deployment, sets []*appsv1.ReplicaSet) bool {
	for _, rs := range active(sets) {
		v, ok := rs.Annotations[DesiredReplicasAnnotation]
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(v, 10, 32); err == nil && int32(n) != replicas(d) {
			return true
		}
	}
	return false
}

func (c *Controller) pausedCondition(ctx context.Context, d *appsv1.Deployment) error {
	if !HasProgressDeadline(d) {
		return nil
	}
	cur := Condition(&d.Status, appsv1.DeploymentProgressing)
	if cur != nil && cur.Reason == ReasonTimedOut {
		return nil
	}
	pausedSet := cur != nil && cur.Reason == ReasonPaused
	switch {
	case d.Spec.Paused && !pausedSet:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonPaused, "Deployment is paused", c.now()))
	case !d.Spec.Paused && pausedSet:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonResumed, "Deployment is resumed", c.now()))
	default:
		return nil
	}
	out, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	*d = *out
	return nil
}

// newReplicaSet finds the new ReplicaSet (bringing its annotations and
// minReadySeconds up to date) or, when create, makes it. What to write
// is decided in decide.go (NewRSRevision, UpdatedNewRS, FoundNewRS,
// NewReplicaSet, CreatedNewRS, OwnNewRS, RaiseCollisionCount,
// FailedNewRS); this writes it.
func (c *Controller) newReplicaSet(ctx context.Context, d *appsv1.Deployment, sets []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	existing, old := c.split(d, sets)
	revision := NewRSRevision(old)
	if existing != nil {
		if rs, changed := UpdatedNewRS(d, existing, revision); changed {
			out, err := c.client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{})
			return out, old, err
		}
		if FoundNewRS(d, existing, c.now()) {
			if err := c.updateDeployment(ctx, d); err != nil {
				return nil, nil, err
			}
		}
		return existing.DeepCopy(), old, nil
	}
	if !create {
		return nil, old, nil
	}
	rs := NewReplicaSet(d, old, revision)
	created, err := c.client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, rs, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		// Ours from an earlier pass the cache has not shown yet, or a hash
		// collision: then the collision count moves the hash.
		if got, gerr := c.client.AppsV1().ReplicaSets(d.Namespace).Get(ctx, rs.Name, metav1.GetOptions{}); gerr == nil && OwnNewRS(d, got) {
			return got, old, nil
		}
		n := RaiseCollisionCount(d)
		if uerr := c.updateDeployment(ctx, d); uerr != nil {
			return nil, nil, uerr
		}
		return nil, nil, fmt.Errorf("replica set %s exists with another template; collision count now %d", rs.Name, n)
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, nil, err
	case err != nil:
		msg, write := FailedNewRS(d, rs.Name, err, c.now())
		if write {
			_ = c.updateDeployment(ctx, d)
		}
		c.recorder.Event(d, kind.Kind, corev1.EventTypeWarning, "FailedCreate", msg)
		return nil, nil, err
	}
	if size := rsReplicas(created); size > 0 {
		c.recorder.Event(d, kind.Kind, corev1.EventTypeNormal, "ScalingReplicaSet", fmt.Sprintf("Scaled up replica set %s from 0 to %d", created.Name, size))
	}
	CreatedNewRS(d, created.Name, revision, c.now())
	if err := c.updateDeployment(ctx, d); err != nil {
		return nil, nil, err
	}
	return created, old, nil
}

// updateDeployment writes d's status and its revision annotation, both
// through the status subresource as upstream (which keeps annotations from
// the body), so the generation does not move; d becomes what was stored.
func (c *Controller) updateDeployment(ctx context.Context, d *appsv1.Deployment) error {
	out, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	*d = *out
	return nil
}

// scale sets rs's size and its replicas annotations, with an event when
// the size changes.
func (c *Controller) scale(ctx context.Context, d *appsv1.Deployment, rs *appsv1.ReplicaSet, size int32) (*appsv1.ReplicaSet, bool, error) {
	cp := rs.DeepCopy()
	from := rsReplicas(rs)
	annotations := setReplicasAnnotations(cp, replicas(d), replicas(d)+MaxSurge(d))
	if from == size && !annotations {
		return rs, false, nil
	}
	cp.Spec.Replicas = &size
	out, err := c.client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, cp, metav1.UpdateOptions{})
	if err != nil {
		return nil, false, err
	}
	if from != size {
		dir := "up"
		if size < from {
			dir = "down"
		}
		c.recorder.Event(d, kind.Kind, corev1.EventTypeNormal, "ScalingReplicaSet", fmt.Sprintf("Scaled %s replica set %s from %d to %d", dir, rs.Name, from, size))
	}
	return out, from != size, nil
}

func (c *Controller) rollingUpdate(ctx context.Context, d *appsv1.Deployment, sets []*appsv1.ReplicaSet) error {
	newRS, old, err := c.newReplicaSet(ctx, d, sets, true)
	if err != nil {
		return err
	}
	all := append(slices.Clone(old), newRS)
	// The new ReplicaSet first: grow it within maxSurge, or shrink it
	// to replicas.
	if r := rsReplicas(newRS); r != replicas(d) {
		size := replicas(d)
		if r < size {
			size = NewRSNewReplicas(d, all, newRS)
		}
		out, scaled, err := c.scale(ctx, d, newRS, size)
		if err != nil {
			return err
		}
		if scaled {
			newRS = out
			return c.rolloutStatus(ctx, d, append(slices.Clone(old), newRS), newRS)
		}
	}
	sizes := ScaleDownOld(d, active(old), newRS)
	scaledDown := false
	for i, rs := range old {
		size, ok := sizes[rs.Name]
		if !ok {
			continue
		}
		out, scaled, err := c.scale(ctx, d, rs, size)
		if err != nil {
			return err
		}
		old[i], scaledDown = out, scaledDown || scaled
	}
	all = append(slices.Clone(old), newRS)
	if !scaledDown && Complete(d, &d.Status) {
		c.cleanup(ctx, d, old)
	}
	return c.rolloutStatus(ctx, d, all, newRS)
}

func (c *Controller) recreate(ctx context.Context, d *appsv1.Deployment, sets []*appsv1.ReplicaSet) error {
	newRS, old, err := c.newReplicaSet(ctx, d, sets, false)
	if err != nil {
		return err
	}
	scaledDown := false
	for i, rs := range old {
		if rsReplicas(rs) == 0 {
			continue
		}
		out, scaled, err := c.scale(ctx, d, rs, 0)
		if err != nil {
			return err
		}
		old[i], scaledDown = out, scaledDown || scaled
	}
	if scaledDown || c.oldPodsRunning(newRS, old) {
		return c.rolloutStatus(ctx, d, append(slices.Clone(old), newRS), newRS)
	}
	if newRS == nil {
		if newRS, old, err = c.newReplicaSet(ctx, d, sets, true); err != nil {
			return err
		}
	}
	if newRS, _, err = c.scale(ctx, d, newRS, replicas(d)); err != nil {
		return err
	}
	if Complete(d, &d.Status) {
		c.cleanup(ctx, d, old)
	}
	return c.rolloutStatus(ctx, d, append(slices.Clone(old), newRS), newRS)
}

// oldPodsRunning: old ReplicaSets still report pods, or pods of theirs
// have not finished.
func (c *Controller) oldPodsRunning(newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) bool {
	if statusTotal(old, func(s appsv1.ReplicaSetStatus) int32 { return s.Replicas }) > 0 {
		return true
	}
	oldUIDs := map[types.UID]bool{}
	for _, rs := range old {
		oldUIDs[rs.UID] = true
	}
	for _, p := range c.pods.Store().List() {
		ref := metav1.GetControllerOf(p)
		if ref == nil || !oldUIDs[ref.UID] || (newRS != nil && ref.UID == newRS.UID) {
			continue
		}
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			return true
		}
	}
	return false
}

// scaleOnly handles a paused Deployment or a change of replicas alone:
// ReplicaSets are resized, no new one is made.
func (c *Controller) scaleOnly(ctx context.Context, d *appsv1.Deployment, sets []*appsv1.ReplicaSet) error {
	newRS, old, err := c.newReplicaSet(ctx, d, sets, false)
	if err != nil {
		return err
	}
	all := append(slices.Clone(old), newRS)
	sizes := ProportionalSizes(d, newRS, old)
	for i, rs := range all {
		if rs == nil {
			continue
		}
		if size, ok := sizes[rs.Name]; ok {
			out, _, err := c.scale(ctx, d, rs, size)
			if err != nil {
				return err
			}
			all[i] = out
			if rs == newRS {
				newRS = out
			}
		}
	}
	if d.Spec.Paused {
		c.cleanup(ctx, d, old)
	}
	return c.writeStatus(ctx, d, Status(d, all, newRS, c.now()))
}

func (c *Controller) cleanup(ctx context.Context, d *appsv1.Deployment, old []*appsv1.ReplicaSet) {
	for _, rs := range ToClean(d, old) {
		uid := rs.UID
		err := c.client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			klog.FromContext(ctx).V(2).Info("Could not clean up an old replica set", "replicaset", key(rs), "err", err)
		}
	}
}

func (c *Controller) rolloutStatus(ctx context.Context, d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) error {
	now := c.now()
	s := RolloutStatus(d, Status(d, all, newRS, now), newRS, now)
	var failure *appsv1.ReplicaSetCondition
	for _, rs := range all {
		if rs == nil {
			continue
		}
		for i := range rs.Status.Conditions {
			if rs.Status.Conditions[i].Type == appsv1.ReplicaSetReplicaFailure && rs.Status.Conditions[i].Status == corev1.ConditionTrue {
				failure = &rs.Status.Conditions[i]
			}
		}
	}
	if failure != nil {
		setCondition(&s, appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: failure.Status, Reason: failure.Reason,
			Message: failure.Message, LastUpdateTime: failure.LastTransitionTime, LastTransitionTime: failure.LastTransitionTime})
	} else {
		removeCondition(&s, appsv1.DeploymentReplicaFailure)
	}
	if err := c.writeStatus(ctx, d, s); err != nil {
		return err
	}
	// A rollout that is neither complete nor timed out is looked at again
	// when its deadline would pass.
	if HasProgressDeadline(d) && !Complete(d, &s) {
		if cond := Condition(&s, appsv1.DeploymentProgressing); cond != nil && cond.Reason != ReasonTimedOut {
			after := cond.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds)*time.Second).Sub(now) + time.Second
			c.queue.AddAfter(key(d), max(after, time.Second))
		}
	}
	return nil
}

func (c *Controller) writeStatus(ctx context.Context, d *appsv1.Deployment, s appsv1.DeploymentStatus) error {
	if apiequality.Semantic.DeepEqual(d.Status, s) {
		return nil
	}
	cp := d.DeepCopy()
	cp.Status = s
	_, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	return ignoreGone(err)
}

func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // the newer object comes with its own event
	}
	return err
}
