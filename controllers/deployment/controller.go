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
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

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
	workers  int
	now      func() time.Time
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
	c := &Controller{client: opts.Client, workers: opts.Workers, now: opts.Now, queue: workqueue.New[string](workqueue.Options{}),
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
	return c, nil
}

func key(m metav1.Object) string { return m.GetNamespace() + "/" + m.GetName() }

// Run syncs Deployments until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	defer c.queue.ShutDown()
	wg.Go(func() { c.recorder.Run(ctx) })
	wg.Go(func() { c.deploys.Run(ctx) })
	wg.Go(func() { c.sets.Run(ctx) })
	wg.Go(func() { c.pods.Run(ctx) })
	if err := informer.WaitForSync(ctx, c.deploys, c.sets, c.pods); err != nil {
		return
	}
	for range c.workers {
		wg.Go(func() {
			c.queue.Work(ctx, c.sync, func(k string, err error) {
				klog.V(2).InfoS("deployment controller: will retry", "deployment", k, "err", err)
			})
		})
	}
	<-ctx.Done()
}

// WaitIdle returns once the caches are listed and nothing is queued.
func (c *Controller) WaitIdle(ctx context.Context) error {
	if err := informer.WaitForSync(ctx, c.deploys, c.sets, c.pods); err != nil {
		return err
	}
	return c.queue.WaitIdle(ctx)
}

func (c *Controller) rsChanged(rs *appsv1.ReplicaSet) {
	if ref := metav1.GetControllerOf(rs); ref != nil {
		if ref.Kind == kind.Kind && ref.APIVersion == kind.GroupVersion().String() {
			c.queue.Add(rs.Namespace + "/" + ref.Name)
		}
		return
	}
	deploys, _ := c.deploys.Store().ByIndex(namespaceIndex, rs.Namespace)
	for _, d := range deploys {
		if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil && !sel.Empty() && sel.Matches(labels.Set(rs.Labels)) {
			c.queue.Add(key(d))
		}
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
	var owned []*appsv1.ReplicaSet
	for _, rs := range all {
		ref := metav1.GetControllerOf(rs)
		matches := sel.Matches(labels.Set(rs.Labels))
		switch {
		case ref != nil && ref.UID != d.UID:
		case ref != nil && matches:
			owned = append(owned, rs)
		case ref != nil:
			if d.DeletionTimestamp == nil {
				if err := c.patchOwners(ctx, rs, fmt.Sprintf(`[{"$patch":"delete","uid":%q}]`, d.UID)); err != nil {
					return nil, err
				}
			}
		case matches && d.DeletionTimestamp == nil && rs.DeletionTimestamp == nil:
			fresh, err := c.client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
			if err != nil || fresh.UID != d.UID || fresh.DeletionTimestamp != nil {
				continue
			}
			ref, _ := json.Marshal([]metav1.OwnerReference{*metav1.NewControllerRef(d, kind)})
			if err := c.patchOwners(ctx, rs, string(ref)); err != nil {
				return nil, err
			}
			owned = append(owned, rs)
		}
	}
	return owned, nil
}

func (c *Controller) patchOwners(ctx context.Context, rs *appsv1.ReplicaSet, refs string) error {
	body := fmt.Sprintf(`{"metadata":{"ownerReferences":%s,"uid":%q}}`, refs, rs.UID)
	_, err := c.client.AppsV1().ReplicaSets(rs.Namespace).Patch(ctx, rs.Name, types.StrategicMergePatchType, []byte(body), metav1.PatchOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
		return nil
	}
	return err
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
// minReadySeconds up to date) or, when create, makes it.
func (c *Controller) newReplicaSet(ctx context.Context, d *appsv1.Deployment, sets []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	existing, old := c.split(d, sets)
	var maxOld int64
	for _, rs := range old {
		maxOld = max(maxOld, Revision(rs))
	}
	revision := strconv.FormatInt(maxOld+1, 10)
	if existing != nil {
		rs := existing.DeepCopy()
		changed := c.setAnnotations(d, rs, revision, true)
		if changed || rs.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
			rs.Spec.MinReadySeconds = d.Spec.MinReadySeconds
			out, err := c.client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{})
			return out, old, err
		}
		needsUpdate := setRevision(d, rs.Annotations[RevisionAnnotation])
		if HasProgressDeadline(d) && Condition(&d.Status, appsv1.DeploymentProgressing) == nil {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonFoundNewRS, fmt.Sprintf("Found new replica set %q", rs.Name), c.now()))
			needsUpdate = true
		}
		if needsUpdate {
			if err := c.updateDeployment(ctx, d); err != nil {
				return nil, nil, err
			}
		}
		return rs, old, nil
	}
	if !create {
		return nil, old, nil
	}
	t := *d.Spec.Template.DeepCopy()
	hash := ComputeHash(&t, d.Status.CollisionCount)
	t.Labels = maps.Clone(t.Labels)
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	t.Labels[HashLabel] = hash
	sel := d.Spec.Selector.DeepCopy()
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[HashLabel] = hash
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-" + hash, Namespace: d.Namespace, Labels: t.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, kind)}},
		Spec: appsv1.ReplicaSetSpec{Replicas: new(int32), MinReadySeconds: d.Spec.MinReadySeconds, Selector: sel, Template: t},
	}
	size := NewRSNewReplicas(d, append(slices.Clone(old), rs), rs)
	*rs.Spec.Replicas = size
	c.setAnnotations(d, rs, revision, false)
	created, err := c.client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, rs, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		// Ours from an earlier pass the cache has not shown yet, or a hash
		// collision: then the collision count moves the hash.
		if got, gerr := c.client.AppsV1().ReplicaSets(d.Namespace).Get(ctx, rs.Name, metav1.GetOptions{}); gerr == nil {
			if ref := metav1.GetControllerOf(got); ref != nil && ref.UID == d.UID && EqualIgnoreHash(&got.Spec.Template, &d.Spec.Template) {
				return got, old, nil
			}
		}
		n := int32(0)
		if d.Status.CollisionCount != nil {
			n = *d.Status.CollisionCount
		}
		n++
		d.Status.CollisionCount = &n
		if uerr := c.updateDeployment(ctx, d); uerr != nil {
			return nil, nil, uerr
		}
		return nil, nil, fmt.Errorf("replica set %s exists with another template; collision count now %d", rs.Name, n)
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, nil, err
	case err != nil:
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", rs.Name, err)
		if HasProgressDeadline(d) {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonFailedRSCreate, msg, c.now()))
			_ = c.updateDeployment(ctx, d)
		}
		c.recorder.Event(d, kind.Kind, corev1.EventTypeWarning, "FailedCreate", msg)
		return nil, nil, err
	}
	if size > 0 {
		c.recorder.Event(d, kind.Kind, corev1.EventTypeNormal, "ScalingReplicaSet", fmt.Sprintf("Scaled up replica set %s from 0 to %d", created.Name, size))
	}
	setRevision(d, revision)
	if HasProgressDeadline(d) {
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewRSCreated, fmt.Sprintf("Created new replica set %q", created.Name), c.now()))
	}
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

// setRevision sets the Deployment's revision annotation.
func setRevision(d *appsv1.Deployment, revision string) bool {
	if d.Annotations[RevisionAnnotation] == revision || revision == "" {
		return false
	}
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[RevisionAnnotation] = revision
	return true
}

// setAnnotations is upstream's SetNewReplicaSetAnnotations: the
// Deployment's annotations (but its own bookkeeping ones) copied, the
// revision raised (the old one kept in revision-history), and the
// desired and max replicas.
func (c *Controller) setAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, revision string, exists bool) bool {
	changed := false
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	for k, v := range d.Annotations {
		switch k {
		case annotationKubectlApply, RevisionAnnotation, RevisionHistoryAnnotation, DesiredReplicasAnnotation, MaxReplicasAnnotation:
			continue
		}
		if rs.Annotations[k] != v {
			rs.Annotations[k] = v
			changed = true
		}
	}
	oldRevision := rs.Annotations[RevisionAnnotation]
	oldN, _ := strconv.ParseInt(oldRevision, 10, 64)
	newN, _ := strconv.ParseInt(revision, 10, 64)
	if oldRevision == "" || oldN < newN {
		rs.Annotations[RevisionAnnotation] = revision
		changed = true
		if oldRevision != "" {
			if h := rs.Annotations[RevisionHistoryAnnotation]; h == "" {
				rs.Annotations[RevisionHistoryAnnotation] = oldRevision
			} else {
				rs.Annotations[RevisionHistoryAnnotation] = h + "," + oldRevision
			}
		}
	}
	if !exists && setReplicasAnnotations(rs, replicas(d), replicas(d)+MaxSurge(d)) {
		changed = true
	}
	return changed
}

func setReplicasAnnotations(rs *appsv1.ReplicaSet, desired, maxReplicas int32) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	d, m := strconv.Itoa(int(desired)), strconv.Itoa(int(maxReplicas))
	if rs.Annotations[DesiredReplicasAnnotation] == d && rs.Annotations[MaxReplicasAnnotation] == m {
		return false
	}
	rs.Annotations[DesiredReplicasAnnotation], rs.Annotations[MaxReplicasAnnotation] = d, m
	return true
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
			klog.V(2).InfoS("deployment controller: clean up old replica set", "replicaset", key(rs), "err", err)
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
