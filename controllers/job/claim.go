package job

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kite-project/kite/controllers/controller"
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
	for _, j := range controller.Selecting(jobs, func(j *batchv1.Job) *metav1.LabelSelector { return j.Spec.Selector }, p.Labels) {
		c.queue.Add(key(j))
	}
}

// claim returns the pods a Job controls, as upstream's
// PodControllerRefManager for Jobs: its own pods its selector still
// matches; orphans it matches, adopted (controller reference and
// job-tracking finalizer) once a fresh read shows the Job neither deleted
// nor replaced; its own pods it no longer matches are released (reference
// and finalizer removed). A Job being deleted adopts and releases nothing.
// Adopted pods are returned as the patch left them, with the finalizer.
func (c *Controller) claim(ctx context.Context, j *batchv1.Job, nsPods []*corev1.Pod) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("selector of job %s: %w", key(j), err)
	}
	if sel.Empty() {
		sel = labels.Nothing() // a Job selects by its generated selector, never everything
	}
	claimer := &controller.Claimer[*corev1.Pod]{Owner: j, Kind: kind, Selector: sel, Client: c.client.CoreV1().Pods(j.Namespace),
		Finalizer: batchv1.JobTrackingFinalizer,
		Fresh: func(ctx context.Context) (metav1.Object, error) {
			return c.client.BatchV1().Jobs(j.Namespace).Get(ctx, j.Name, metav1.GetOptions{})
		},
		Patched: func(p *corev1.Pod) { c.writes.wroteAt(j.UID, resPods, p.ResourceVersion) }}
	return claimer.Claim(ctx, nsPods)
}
