// Package cronjob creates Jobs on CronJobs' schedules: the job of
// kube-controller-manager's cronjob controller (v2).
//
// At each start time (standard cron syntax, @hourly-style macros and
// @every, in the CronJob's timeZone) it creates the Job <name>-<minutes
// since the epoch> from the job template, unless the time is older than
// startingDeadlineSeconds, the CronJob is suspended, or concurrencyPolicy
// Forbid finds one still active (Replace deletes those instead). It keeps
// status.active, lastScheduleTime and lastSuccessfulTime, and deletes the
// oldest finished Jobs beyond the history limits.
package cronjob

import (
	"context"
	"fmt"
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/events"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

const ownerIndex = "owner"

// ScheduledTimestampAnnotation is the scheduled time a Job was created
// for.
const ScheduledTimestampAnnotation = "batch.kubernetes.io/cronjob-scheduled-timestamp"

var kind = batchv1.SchemeGroupVersion.WithKind("CronJob")

// Options configure a Controller.
type Options struct {
	// Client watches CronJobs and Jobs and writes them. Required.
	Client kubernetes.Interface
	// Informers shares caches with the other controllers of the process;
	// nil means caches of the controller's own.
	Informers *informer.Factory
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Controller is the CronJob controller. Run drives it.
type Controller struct {
	client   kubernetes.Interface
	now      func() time.Time
	loop     *controller.Loop[string]
	queue    *workqueue.Queue[string]
	recorder *events.Recorder
	crons    *informer.Informer[*batchv1.CronJob]
	jobs     *informer.Informer[*batchv1.Job]
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("cronjob controller: Client is required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Controller{client: opts.Client, now: opts.Now, queue: workqueue.New[string](workqueue.Options{}),
		recorder: events.New(events.Options{Client: opts.Client, Component: "cronjob-controller"})}
	var err error
	c.crons, err = informer.For(opts.Informers, informer.Options[*batchv1.CronJob]{
		Name: "cronjobs", Shape: informer.Shape{Resource: "cronjobs.batch"}, ListerWatcher: listwatch.FromTypedClient(opts.Client.BatchV1().CronJobs(""), nil),
		Handlers: informer.Handlers[*batchv1.CronJob]{
			OnAdd:    func(cj *batchv1.CronJob) { c.queue.Add(key(cj)) },
			OnUpdate: func(_, cj *batchv1.CronJob) { c.queue.Add(key(cj)) },
		},
	})
	if err != nil {
		return nil, err
	}
	enqueueOwner := func(j *batchv1.Job) {
		if ref := metav1.GetControllerOf(j); ref != nil && ref.Kind == kind.Kind {
			c.queue.Add(j.Namespace + "/" + ref.Name)
		}
	}
	c.jobs, err = informer.For(opts.Informers, informer.Options[*batchv1.Job]{
		Name: "jobs", Shape: informer.Shape{Resource: "jobs.batch"}, ListerWatcher: listwatch.FromTypedClient(opts.Client.BatchV1().Jobs(""), nil),
		Indexers: map[string]listwatch.IndexFunc[*batchv1.Job]{ownerIndex: func(j *batchv1.Job) ([]string, error) {
			if ref := metav1.GetControllerOf(j); ref != nil && ref.Kind == kind.Kind {
				return []string{string(ref.UID)}, nil
			}
			return nil, nil
		}},
		Handlers: informer.Handlers[*batchv1.Job]{OnAdd: enqueueOwner, OnUpdate: func(_, j *batchv1.Job) { enqueueOwner(j) }, OnDelete: enqueueOwner},
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[string]{Name: "cronjob-controller", Queue: c.queue, Informers: []controller.Informer{c.crons, c.jobs},
		Recorder: c.recorder, Sync: c.sync}
	return c, nil
}

var key = controller.Key

// Run syncs CronJobs until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once the caches are listed and nothing is queued.
func (c *Controller) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

func finished(j *batchv1.Job) (batchv1.JobConditionType, bool) {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type, true
		}
	}
	return "", false
}

func (c *Controller) sync(ctx context.Context, k string) error {
	cached, ok := c.crons.Store().Get(k)
	if !ok {
		return nil
	}
	cj := cached.DeepCopy()
	now := c.now()
	jobs, _ := c.jobs.Store().ByIndex(ownerIndex, string(cj.UID))
	byUID := map[types.UID]*batchv1.Job{}
	for _, j := range jobs {
		byUID[j.UID] = j
	}
	// Active: drop what finished or went, add what runs unlisted.
	var activeRefs []corev1.ObjectReference
	for _, ref := range cj.Status.Active {
		j := byUID[ref.UID]
		if j == nil {
			c.recorder.Event(cj, kind.Kind, corev1.EventTypeNormal, "MissingJob", "Active job went missing: "+ref.Name)
			continue
		}
		if t, done := finished(j); done {
			c.recorder.Event(cj, kind.Kind, corev1.EventTypeNormal, "SawCompletedJob", fmt.Sprintf("Saw completed job: %s, condition: %s", j.Name, t))
			if t == batchv1.JobComplete && j.Status.CompletionTime != nil &&
				(cj.Status.LastSuccessfulTime == nil || cj.Status.LastSuccessfulTime.Before(j.Status.CompletionTime)) {
				cj.Status.LastSuccessfulTime = j.Status.CompletionTime.DeepCopy()
			}
			continue
		}
		activeRefs = append(activeRefs, ref)
	}
	for _, j := range jobs {
		if _, done := finished(j); done || j.DeletionTimestamp != nil || inActive(activeRefs, j.UID) {
			continue
		}
		activeRefs = append(activeRefs, ref(j))
	}
	cj.Status.Active = activeRefs
	if err := c.writeStatus(ctx, cached, cj); err != nil {
		return err
	}
	c.cleanup(ctx, cj, jobs)
	if cj.DeletionTimestamp != nil || (cj.Spec.Suspend != nil && *cj.Spec.Suspend) {
		return nil
	}
	sched, err := Schedule(cj)
	if err != nil {
		c.recorder.Event(cj, kind.Kind, corev1.EventTypeWarning, "InvalidSchedule", fmt.Sprintf("invalid schedule: %s : %v", cj.Spec.Schedule, err))
		return nil
	}
	scheduled, missed := MostRecent(cj, sched, now)
	defer func() {
		if next := sched.Next(now); !next.IsZero() {
			c.queue.AddAfter(k, next.Sub(now)+100*time.Millisecond)
		}
	}()
	if missed > tooManyMissed {
		c.recorder.Event(cj, kind.Kind, corev1.EventTypeWarning, "TooManyMissedTimes",
			"too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
	}
	if scheduled == nil {
		return nil
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil && scheduled.Add(time.Duration(*d)*time.Second).Before(now) {
		c.recorder.Event(cj, kind.Kind, corev1.EventTypeWarning, "MissSchedule", "Missed scheduled time to start a job: "+scheduled.UTC().Format(time.RFC1123Z))
		return nil
	}
	name := JobName(cj, *scheduled)
	for _, r := range cj.Status.Active {
		if r.Name == name {
			// Made at an earlier pass whose status write was lost.
			return c.recordSchedule(ctx, cj, *scheduled)
		}
	}
	switch cj.Spec.ConcurrencyPolicy {
	case batchv1.ForbidConcurrent:
		if len(cj.Status.Active) > 0 {
			c.recorder.Event(cj, kind.Kind, corev1.EventTypeNormal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
			return nil
		}
	case batchv1.ReplaceConcurrent:
		bg := metav1.DeletePropagationBackground
		for _, r := range cj.Status.Active {
			err := c.client.BatchV1().Jobs(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			c.recorder.Event(cj, kind.Kind, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job "+r.Name)
		}
		cj.Status.Active = nil
	}
	j := jobFor(cj, name, *scheduled)
	created, err := c.client.BatchV1().Jobs(cj.Namespace).Create(ctx, j, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		// Made at an earlier pass whose status write was lost (a
		// conflict): record it now if it is ours.
		got, gerr := c.client.BatchV1().Jobs(cj.Namespace).Get(ctx, name, metav1.GetOptions{})
		if gerr != nil {
			return gerr
		}
		if ref := metav1.GetControllerOf(got); ref == nil || ref.UID != cj.UID {
			return nil
		}
		created = got
	case err != nil:
		c.recorder.Event(cj, kind.Kind, corev1.EventTypeWarning, "FailedCreate", fmt.Sprintf("Error creating job: %v", err))
		return err
	}
	if err == nil {
		c.recorder.Event(cj, kind.Kind, corev1.EventTypeNormal, "SuccessfulCreate", "Created job "+created.Name)
	}
	if !inActive(cj.Status.Active, created.UID) {
		cj.Status.Active = append(cj.Status.Active, ref(created))
	}
	return c.recordSchedule(ctx, cj, *scheduled)
}

// recordSchedule writes status.active as cj has it and lastScheduleTime
// (when older than scheduled), reading the CronJob afresh on a conflict
// so that a start once made is never lost from the status.
func (c *Controller) recordSchedule(ctx context.Context, cj *batchv1.CronJob, scheduled time.Time) error {
	active := cj.Status.Active
	if cached, ok := c.crons.Store().Get(key(cj)); ok && cached.Status.LastScheduleTime != nil &&
		!cached.Status.LastScheduleTime.Time.Before(scheduled) && apiequality.Semantic.DeepEqual(cached.Status.Active, active) {
		return nil // already recorded
	}
	for range 3 {
		if cj.Status.LastScheduleTime == nil || cj.Status.LastScheduleTime.Time.Before(scheduled) {
			t := metav1.NewTime(scheduled)
			cj.Status.LastScheduleTime = &t
		}
		for _, r := range active {
			if !inActive(cj.Status.Active, r.UID) {
				cj.Status.Active = append(cj.Status.Active, r)
			}
		}
		_, err := c.client.BatchV1().CronJobs(cj.Namespace).UpdateStatus(ctx, cj, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			return err
		}
		fresh, gerr := c.client.BatchV1().CronJobs(cj.Namespace).Get(ctx, cj.Name, metav1.GetOptions{})
		if gerr != nil {
			return gerr
		}
		cj = fresh
	}
	return fmt.Errorf("update status of cronjob %s: conflicts", key(cj))
}

func inActive(refs []corev1.ObjectReference, uid types.UID) bool {
	for _, r := range refs {
		if r.UID == uid {
			return true
		}
	}
	return false
}

func ref(j *batchv1.Job) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: "batch/v1", Kind: "Job", Namespace: j.Namespace, Name: j.Name, UID: j.UID, ResourceVersion: j.ResourceVersion}
}

// jobFor is upstream's getJobFromTemplate2.
func jobFor(cj *batchv1.CronJob, name string, scheduled time.Time) *batchv1.Job {
	t := cj.Spec.JobTemplate.DeepCopy()
	annotations := t.Annotations
	if annotations == nil {
		annotations = map[string]string{}
	}
	loc := time.Local
	if cj.Spec.TimeZone != nil {
		if l, err := time.LoadLocation(*cj.Spec.TimeZone); err == nil {
			loc = l
		}
	}
	annotations[ScheduledTimestampAnnotation] = scheduled.In(loc).Format(time.RFC3339)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cj.Namespace, Labels: t.Labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, kind)}},
		Spec: t.Spec,
	}
}

// cleanup deletes the oldest finished Jobs beyond the history limits.
func (c *Controller) cleanup(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) {
	var ok, failed []*batchv1.Job
	for _, j := range jobs {
		switch t, done := finished(j); {
		case !done || j.DeletionTimestamp != nil:
		case t == batchv1.JobComplete:
			ok = append(ok, j)
		default:
			failed = append(failed, j)
		}
	}
	trim := func(list []*batchv1.Job, limit *int32) {
		if limit == nil || len(list) <= int(*limit) {
			return
		}
		sort.SliceStable(list, func(i, j int) bool {
			a, b := startOf(list[i]), startOf(list[j])
			if a.Equal(b) {
				return list[i].Name < list[j].Name // names carry the scheduled minute
			}
			return a.Before(b)
		})
		bg := metav1.DeletePropagationBackground
		for _, j := range list[:len(list)-int(*limit)] {
			err := c.client.BatchV1().Jobs(j.Namespace).Delete(ctx, j.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
			if err == nil {
				c.recorder.Event(cj, kind.Kind, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job "+j.Name)
			}
		}
	}
	trim(ok, cj.Spec.SuccessfulJobsHistoryLimit)
	trim(failed, cj.Spec.FailedJobsHistoryLimit)
}

func startOf(j *batchv1.Job) time.Time {
	if j.Status.StartTime != nil {
		return j.Status.StartTime.Time
	}
	return j.CreationTimestamp.Time
}

func (c *Controller) writeStatus(ctx context.Context, old, cj *batchv1.CronJob) error {
	if apiequality.Semantic.DeepEqual(old.Status, cj.Status) {
		return nil
	}
	out, err := c.client.BatchV1().CronJobs(cj.Namespace).UpdateStatus(ctx, cj, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update status of cronjob %s: %w", key(cj), err)
	}
	cj.ResourceVersion = out.ResourceVersion
	return nil
}
