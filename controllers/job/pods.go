package job

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kite-project/kite/controllers/controller"
)

// manage deletes the pods a Job has too many of (all of them while it is
// suspended, duplicates of an index first), or creates those it lacks,
// after its back-off (per index, with backoffLimitPerIndex); never both in
// one sync, and nothing while its own last creations and deletions are not
// yet seen. It returns the active pods it deleted.
func (c *Controller) manage(ctx context.Context, st *jobState) ([]*corev1.Pod, error) {
	j := st.j
	if !st.exp.satisfied {
		// Wait to see our own creations and deletions; once they expire,
		// those never seen are made again (upstream's expectations).
		if wait := c.expect.Expiry(string(j.UID)); wait > 0 {
			c.queue.AddAfter(key(j), wait)
		}
		return nil, nil
	}
	if len(st.exp.released) > 0 {
		// Pods it counted are not yet seen released: the Job's cached
		// status may predate that count too. Decide once they are.
		c.queue.AddAfter(key(j), 100*time.Millisecond)
		return nil, nil
	}
	// Successes still to be counted (left by the uncounted bound) count:
	// their pods are done.
	succeeded := st.succeeded
	want := int(WantActive(j, succeeded))
	switch {
	case suspended(j):
		want = 0
	case j.Spec.Completions == nil && succeeded > 0:
		want = len(st.active) // what runs may finish; nothing more starts
	}
	if excess := ExcessPods(j, st.active, len(st.active)-want); len(excess) > 0 {
		excess = excess[:min(len(excess), maxPodCreatesPerSync)]
		// Their finalizers go first: a pod the Job stops is not a failure.
		if err := c.releaseFinalizers(ctx, j.UID, excess); err != nil {
			return nil, err
		}
		c.deletePods(ctx, j, excess)
		return excess, nil
	}
	diff := want - len(st.active)
	if onlyReplaceFailed(j) {
		diff -= len(st.terminating) // replaced once they have failed
	}
	diff = min(diff, maxPodCreatesPerSync)
	if diff <= 0 {
		return nil, nil
	}
	if !perIndex(j) {
		if wait := Remaining(st.now, st.backoff.FailuresAfterLastSuccess, st.backoff.LastFailure, c.backoff, c.backoffMax); wait > 0 {
			c.queue.AddAfter(key(j), wait)
			return nil, nil
		}
	}
	var toCreate []int // completion indexes, or -1 for NonIndexed
	if indexed(j) {
		taken := maps.Clone(st.completed)
		maps.Copy(taken, st.failedIndexes)
		busy := st.active
		if onlyReplaceFailed(j) {
			busy = append(slices.Clone(busy), st.terminating...)
		}
		for _, p := range busy {
			if i, ok := index(p); ok {
				taken[i] = true
			}
		}
		toCreate = FirstPendingIndexes(st.completions, diff, taken)
		if perIndex(j) {
			var now []int
			var soonest time.Duration
			for _, i := range toCreate {
				wait := RemainingForIndex(st.now, st.delayed[i], c.backoff, c.backoffMax)
				if wait == 0 {
					now = append(now, i)
				} else if soonest == 0 || wait < soonest {
					soonest = wait
				}
			}
			if len(now) == 0 && soonest > 0 {
				c.queue.AddAfter(key(j), soonest)
				return nil, nil
			}
			toCreate = now
		}
	} else {
		for range diff {
			toCreate = append(toCreate, -1)
		}
	}
	if len(toCreate) == 0 {
		return nil, nil
	}
	// Expected before they are sent: the cache may show a pod before its
	// create returns.
	jobKey := string(j.UID)
	names, anonymous := make([]string, len(toCreate)), 0
	for n, i := range toCreate {
		if i >= 0 {
			names[n] = strconv.Itoa(i)
		} else {
			anonymous++
		}
	}
	c.expect.Expect(jobKey, anonymous, slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "" }), nil)
	var next int
	var nextMu sync.Mutex
	_, err := controller.SlowStart(len(toCreate), func() error {
		nextMu.Lock()
		n := next
		next++
		nextMu.Unlock()
		var replaced *corev1.Pod
		if i := toCreate[n]; i >= 0 {
			replaced = st.delayed[i]
		}
		err := c.createPod(ctx, j, toCreate[n], replaced)
		if err != nil && !createdUnknown(err) {
			c.expect.Created(jobKey, names[n]) // never coming
		}
		return err
	})
	nextMu.Lock()
	for _, name := range names[next:] {
		c.expect.Created(jobKey, name) // never tried
	}
	nextMu.Unlock()
	return nil, err
}

// createdUnknown says whether a create that failed with err may still
// have made its pod: a timeout, the server's or ours. Its expectation
// stays, as upstream's replicaset controller keeps it, so that no other
// pod takes its place (its index) unless it never shows and expires.
func createdUnknown(err error) bool {
	return apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || errors.Is(err, context.DeadlineExceeded)
}

// createPod creates a pod of the Job, of completion index idx (-1 for
// NonIndexed); with backoffLimitPerIndex it carries its index's failure
// counts, those of the failed pod it replaces.
func (c *Controller) createPod(ctx context.Context, j *batchv1.Job, idx int, replaced *corev1.Pod) error {
	if err := ctx.Err(); err != nil {
		return err // stopping: start no more
	}
	// Seen through once sent, so a successor never lists before it lands.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	t := j.Spec.Template.DeepCopy()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: j.Name + "-", Namespace: j.Namespace, Labels: t.Labels, Annotations: t.Annotations,
			Finalizers:      append(t.Finalizers, batchv1.JobTrackingFinalizer),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(j, kind)},
		},
		Spec: t.Spec,
	}
	if idx >= 0 {
		v := strconv.Itoa(idx)
		p.GenerateName = fmt.Sprintf("%s-%d-", j.Name, idx)
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Labels[batchv1.JobCompletionIndexAnnotation] = v
		p.Annotations[batchv1.JobCompletionIndexAnnotation] = v
		if perIndex(j) {
			counted, ignored := NextIndexFailureCounts(j, replaced)
			p.Annotations[batchv1.JobIndexFailureCountAnnotation] = strconv.Itoa(int(counted))
			if ignored > 0 {
				p.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] = strconv.Itoa(int(ignored))
			}
		}
		p.Spec.Hostname = fmt.Sprintf("%s-%d", j.Name, idx)
		env := corev1.EnvVar{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			APIVersion: "v1", FieldPath: fmt.Sprintf("metadata.labels['%s']", batchv1.JobCompletionIndexAnnotation)}}}
		for i := range p.Spec.InitContainers {
			p.Spec.InitContainers[i].Env = append(p.Spec.InitContainers[i].Env, env)
		}
		for i := range p.Spec.Containers {
			p.Spec.Containers[i].Env = append(p.Spec.Containers[i].Env, env)
		}
	}
	created, err := c.client.CoreV1().Pods(j.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		c.recorder.Event(j, kind.Kind, corev1.EventTypeWarning, "FailedCreate", fmt.Sprintf("Error creating: %v", err))
		return err
	}
	c.writes.wroteAt(j.UID, resPods, created.ResourceVersion)
	c.recorder.Event(j, kind.Kind, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: "+created.Name)
	return nil
}

// deletePods deletes pods, each expected until the cache shows it
// deleting or gone.
func (c *Controller) deletePods(ctx context.Context, j *batchv1.Job, pods []*corev1.Pod) {
	for _, p := range pods {
		uid := p.UID
		c.expect.ExpectDeletions(string(j.UID), string(uid))
		err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil {
			c.expect.Deleted(string(j.UID), string(uid)) // no deletion to see
			if !apierrors.IsNotFound(err) {
				c.recorder.Event(j, kind.Kind, corev1.EventTypeWarning, "FailedDelete", fmt.Sprintf("Error deleting: %v", err))
			}
			continue
		}
		c.recorder.Event(j, kind.Kind, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: "+p.Name)
	}
}

// releaseFinalizers removes the job-tracking finalizer from pods, with a
// JSON patch test so only that finalizer goes.
func (c *Controller) releaseFinalizers(ctx context.Context, jobUID types.UID, pods []*corev1.Pod) error {
	for _, p := range pods {
		i := slices.Index(p.Finalizers, batchv1.JobTrackingFinalizer)
		if i < 0 {
			continue
		}
		patch := fmt.Sprintf(`[{"op":"test","path":"/metadata/finalizers/%d","value":%q},{"op":"remove","path":"/metadata/finalizers/%d"}]`, i, batchv1.JobTrackingFinalizer, i)
		// Expected before the patch is sent: the cache may show its
		// result before Patch returns. An orphan's (no jobUID) concerns
		// no Job's sync.
		if jobUID != "" {
			c.mu.Lock()
			c.released[p.UID] = jobUID
			c.mu.Unlock()
		}
		out, err := c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
		if err == nil && jobUID != "" {
			c.writes.wroteAt(jobUID, resPods, out.ResourceVersion)
		}
		if apierrors.IsNotFound(err) {
			c.seenReleased(p.UID)
		}
		if err != nil && !apierrors.IsNotFound(err) {
			c.seenReleased(p.UID)
			return fmt.Errorf("remove finalizer of pod %s: %w", key(p), err)
		}
	}
	return nil
}
