package job

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// jobOf is the name and uid of the batch/v1 Job controlling p, if one does.
func jobOf(p *corev1.Pod) *metav1.OwnerReference {
	if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == kind.Kind && ref.APIVersion == kind.GroupVersion().String() {
		return ref
	}
	return nil
}

// podChanged queues the Jobs a pod change concerns: its Job (and the one
// it had before, if that changed) or, for an orphan that is new or whose
// labels or owner changed, every Job of its namespace that selects it
// and so may adopt it (upstream's addPod and updatePod).
func (c *Controller) podChanged(old, p *corev1.Pod) {
	ref := jobOf(p)
	if ref != nil {
		c.queue.Add(p.Namespace + "/" + ref.Name)
	}
	if old != nil {
		if oldRef := jobOf(old); oldRef != nil && (ref == nil || oldRef.UID != ref.UID) {
			c.queue.Add(old.Namespace + "/" + oldRef.Name)
		}
	}
	if metav1.GetControllerOf(p) != nil {
		return
	}
	if old != nil && labels.Equals(old.Labels, p.Labels) && metav1.GetControllerOf(old) == nil {
		return
	}
	jobs, _ := c.jobs.Store().ByIndex(namespaceIndex, p.Namespace)
	for _, j := range jobs {
		if sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector); err == nil && !sel.Empty() && sel.Matches(labels.Set(p.Labels)) {
			c.queue.Add(key(j))
		}
	}
}

// claim returns the pods a Job controls, as upstream's
// PodControllerRefManager for Jobs: its own pods its selector still
// matches; orphans it matches, adopted (controller reference and
// job-tracking finalizer) once a fresh read shows the Job neither deleted
// nor replaced; its own pods it no longer matches are released (reference
// and finalizer removed). A Job being deleted adopts and releases nothing.
// Adopted pods are returned with the finalizer, as the cache will show
// them.
func (c *Controller) claim(ctx context.Context, j *batchv1.Job, nsPods []*corev1.Pod) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("selector of job %s: %w", key(j), err)
	}
	var owned []*corev1.Pod
	var adoptChecked, canAdopt bool
	for _, p := range nsPods {
		ref := metav1.GetControllerOf(p)
		matches := !sel.Empty() && sel.Matches(labels.Set(p.Labels))
		switch {
		case ref != nil && ref.UID != j.UID:
			continue // another controller's
		case ref != nil && matches:
			owned = append(owned, p)
		case ref != nil:
			if j.DeletionTimestamp != nil {
				owned = append(owned, p)
				continue
			}
			body := fmt.Sprintf(`{"metadata":{"uid":%q,"ownerReferences":[{"$patch":"delete","uid":%q}],"$deleteFromPrimitiveList/finalizers":[%q]}}`,
				p.UID, j.UID, batchv1.JobTrackingFinalizer)
			if err := c.patchPod(ctx, j, p, body); err != nil {
				return nil, fmt.Errorf("release pod %s: %w", key(p), err)
			}
		case matches && j.DeletionTimestamp == nil && p.DeletionTimestamp == nil:
			if !adoptChecked {
				adoptChecked, canAdopt = true, c.canAdopt(ctx, j)
			}
			if !canAdopt {
				continue
			}
			refs, _ := json.Marshal([]metav1.OwnerReference{*metav1.NewControllerRef(j, kind)})
			body := fmt.Sprintf(`{"metadata":{"uid":%q,"ownerReferences":%s,"finalizers":[%q]}}`, p.UID, refs, batchv1.JobTrackingFinalizer)
			if err := c.patchPod(ctx, j, p, body); err != nil {
				return nil, fmt.Errorf("adopt pod %s: %w", key(p), err)
			}
			if !slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
				p = p.DeepCopy()
				p.Finalizers = append(p.Finalizers, batchv1.JobTrackingFinalizer)
			}
			owned = append(owned, p)
		}
	}
	return owned, nil
}

// canAdopt reads the Job afresh: one being deleted, or replaced by one of
// the same name, adopts nothing (upstream's RecheckDeletionTimestamp).
func (c *Controller) canAdopt(ctx context.Context, j *batchv1.Job) bool {
	fresh, err := c.client.BatchV1().Jobs(j.Namespace).Get(ctx, j.Name, metav1.GetOptions{})
	return err == nil && fresh.UID == j.UID && fresh.DeletionTimestamp == nil
}

// patchPod applies a strategic merge patch that names the pod's uid, so a
// pod replaced under the same name is left alone; one gone is no error.
func (c *Controller) patchPod(ctx context.Context, j *batchv1.Job, p *corev1.Pod, body string) error {
	out, err := c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, []byte(body), metav1.PatchOptions{})
	switch {
	case err == nil:
		c.writes.wroteAt(j.UID, resPods, out.ResourceVersion)
		return nil
	case apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || apierrors.IsConflict(err):
		return nil // gone or replaced (the uid differs)
	default:
		return err
	}
}
