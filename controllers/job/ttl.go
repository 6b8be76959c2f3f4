package job

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// expire deletes a finished Job whose ttlSecondsAfterFinished has passed,
// as upstream's ttl-after-finished controller: after a fresh read shows it
// still expired (its TTL may have changed since the cache saw it), in the
// foreground (its pods go first) with a uid precondition.
func (c *Controller) expire(ctx context.Context, j *batchv1.Job, now time.Time) error {
	due, ok := ExpiresAt(j)
	if !ok || j.DeletionTimestamp != nil {
		return nil
	}
	if now.Before(due) {
		c.queue.AddAfter(key(j), due.Sub(now))
		return nil
	}
	fresh, err := c.ttlClient.BatchV1().Jobs(j.Namespace).Get(ctx, j.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read job %s before its TTL deletion: %w", key(j), err)
	}
	if fresh.UID != j.UID || fresh.DeletionTimestamp != nil {
		return nil
	}
	if due, ok = ExpiresAt(fresh); !ok {
		return nil
	}
	if now.Before(due) {
		c.queue.AddAfter(key(j), due.Sub(now))
		return nil
	}
	fg, uid := metav1.DeletePropagationForeground, j.UID
	err = c.ttlClient.BatchV1().Jobs(j.Namespace).Delete(ctx, j.Name, metav1.DeleteOptions{PropagationPolicy: &fg, Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// ExpiresAt is when a finished Job's ttlSecondsAfterFinished passes: that
// long after its Complete or Failed condition turned True. It is false
// for a Job without a TTL or not finished.
func ExpiresAt(j *batchv1.Job) (time.Time, bool) {
	if j.Spec.TTLSecondsAfterFinished == nil {
		return time.Time{}, false
	}
	for _, cond := range j.Status.Conditions {
		if (cond.Type == batchv1.JobComplete || cond.Type == batchv1.JobFailed) && cond.Status == corev1.ConditionTrue {
			return cond.LastTransitionTime.Add(time.Duration(*j.Spec.TTLSecondsAfterFinished) * time.Second), true
		}
	}
	return time.Time{}, false
}
