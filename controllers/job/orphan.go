package job

import (
	"context"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite/controllers/controller"
)

// orphanPrefix marks a queue key as a pod's ("pod:ns/name"), not a Job's:
// a namespace has no ':'.
const orphanPrefix = "pod:"

func hasTrackingFinalizer(p *corev1.Pod) bool {
	return slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer)
}

// orphanChanged queues, for the removal of its job-tracking finalizer, a
// pod no Job will account for, as upstream's job controller does (its
// orphan queue): one without a controller, or one deleted whose Job is gone.
func (c *Controller) orphanChanged(p *corev1.Pod, deleted bool) {
	if !hasTrackingFinalizer(p) {
		return
	}
	ref := metav1.GetControllerOf(p)
	if ref == nil || (deleted && c.jobOfPod(p) == nil) {
		c.queue.Add(orphanPrefix + key(p))
	}
}

// jobGone queues the pods a deleted Job still holds with the finalizer.
func (c *Controller) jobGone(j *batchv1.Job) {
	pods, _ := c.pods.Store().ByIndex(ownerIndex, string(j.UID))
	for _, p := range pods {
		if hasTrackingFinalizer(p) {
			c.queue.Add(orphanPrefix + key(p))
		}
	}
}

// jobOfPod is the cached Job controlling p, or nil.
func (c *Controller) jobOfPod(p *corev1.Pod) *batchv1.Job {
	j, _ := controller.Owner(c.jobs.Store(), p.Namespace, metav1.GetControllerOf(p), kind)
	return j
}

// syncOrphan removes the finalizer of a pod that is still an orphan: no
// controller, or a batch/v1 Job that is gone or finished; not that of a
// pod another kind controls, or whose Job another controller manages.
func (c *Controller) syncOrphan(ctx context.Context, podKey string) error {
	p, ok := c.pods.Store().Get(podKey)
	if !ok || !hasTrackingFinalizer(p) {
		return nil
	}
	if ref := metav1.GetControllerOf(p); ref != nil {
		if jobOf(p) == nil {
			return nil // not a Job's
		}
		if j := c.jobOfPod(p); j != nil && (ManagedElsewhere(j) || !finished(&j.Status)) {
			return nil // its Job accounts for it
		}
	}
	return c.releaseFinalizers(ctx, "", []*corev1.Pod{p})
}

func isOrphanKey(k string) (string, bool) { return strings.CutPrefix(k, orphanPrefix) }
