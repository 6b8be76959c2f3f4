package cronjob_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/controllers/cronjob"
)

// clock is a test clock the controller reads; advancing it and touching
// the CronJob makes the controller look again.
type clock struct{ offset atomic.Int64 }

func (c *clock) now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) advance(d time.Duration) { c.offset.Add(int64(d)) }

func start(t *testing.T) (kubernetes.Interface, string, *clock) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cron-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{}
	cc, err := cronjob.New(cronjob.Options{Client: cs, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { cc.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return cs, ns.Name, clk
}

func touch(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"test/touch":"%d"}}}`, time.Now().UnixNano())
	if _, err := cs.BatchV1().CronJobs(ns).Patch(context.Background(), name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func jobsOf(t *testing.T, cs kubernetes.Interface, ns string, want int) []batchv1.Job {
	t.Helper()
	var jobs []batchv1.Job
	err := wait.PollUntilContextTimeout(context.Background(), 30*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := cs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		jobs = nil
		for _, j := range l.Items {
			if j.DeletionTimestamp == nil {
				jobs = append(jobs, j)
			}
		}
		return len(jobs) == want, nil
	})
	if err != nil {
		for _, j := range jobs {
			t.Logf("job %s uid %s created %v complete=%d", j.Name, j.UID, j.CreationTimestamp, len(j.Status.Conditions))
		}
		t.Fatalf("want %d jobs, have %d: %v", want, len(jobs), err)
	}
	return jobs
}

func complete(t *testing.T, cs kubernetes.Interface, j *batchv1.Job) {
	t.Helper()
	now := metav1.Now()
	j.Status.StartTime, j.Status.CompletionTime, j.Status.Succeeded = &now, &now, 1
	j.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now}}
	if _, err := cs.BatchV1().Jobs(j.Namespace).UpdateStatus(context.Background(), j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestCronJobSchedulesConcurrencyAndHistory(t *testing.T) {
	cs, ns, clk := start(t)
	_, err := cs.BatchV1().CronJobs(ns).Create(context.Background(), &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "tick"},
		Spec: batchv1.CronJobSpec{Schedule: "* * * * *", ConcurrencyPolicy: batchv1.ForbidConcurrent, SuccessfulJobsHistoryLimit: ptr.To[int32](1),
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clk.advance(61 * time.Second)
	touch(t, cs, ns, "tick")
	first := jobsOf(t, cs, ns, 1)[0]
	if ref := metav1.GetControllerOf(&first); ref == nil || ref.Name != "tick" || first.Annotations[cronjob.ScheduledTimestampAnnotation] == "" {
		t.Errorf("job %s: owner %+v annotations %v", first.Name, ref, first.Annotations)
	}
	err = wait.PollUntilContextTimeout(context.Background(), 30*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		c, err := cs.BatchV1().CronJobs(ns).Get(ctx, "tick", metav1.GetOptions{})
		return err == nil && len(c.Status.Active) == 1 && c.Status.LastScheduleTime != nil, err
	})
	if err != nil {
		t.Fatalf("status.active: %v", err)
	}

	// Forbid: the next minute passes while the first Job runs.
	clk.advance(60 * time.Second)
	touch(t, cs, ns, "tick")
	time.Sleep(300 * time.Millisecond)
	jobsOf(t, cs, ns, 1)

	// Once it completes, the start time Forbid held back runs, and the
	// history limit of 1 removes the first Job once the second completes.
	complete(t, cs, &first)
	err = wait.PollUntilContextTimeout(context.Background(), 30*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		c, err := cs.BatchV1().CronJobs(ns).Get(ctx, "tick", metav1.GetOptions{})
		return err == nil && c.Status.LastSuccessfulTime != nil, err
	})
	if err != nil {
		t.Fatalf("lastSuccessfulTime: %v", err)
	}
	second := jobsOf(t, cs, ns, 2)
	var running *batchv1.Job
	for i := range second {
		if second[i].Name != first.Name {
			running = &second[i]
		}
	}
	complete(t, cs, running)
	if left := jobsOf(t, cs, ns, 1); left[0].Name != running.Name {
		t.Errorf("history kept %s, want the newer %s", left[0].Name, running.Name)
	}

	// Replace: a running Job gives way to the next.
	// The controller writes the CronJob's status meanwhile, so the update
	// is retried on a conflict, as any client of a controlled object does.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := cs.BatchV1().CronJobs(ns).Get(context.Background(), "tick", metav1.GetOptions{})
		if err != nil {
			return err
		}
		c.Spec.ConcurrencyPolicy = batchv1.ReplaceConcurrent
		c.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](0)
		_, err = cs.BatchV1().CronJobs(ns).Update(context.Background(), c, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	jobsOf(t, cs, ns, 0)
	clk.advance(60 * time.Second)
	touch(t, cs, ns, "tick")
	third := jobsOf(t, cs, ns, 1)[0]
	clk.advance(60 * time.Second)
	touch(t, cs, ns, "tick")
	err = wait.PollUntilContextTimeout(context.Background(), 30*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := cs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, j := range l.Items {
			if j.Name == third.Name && j.DeletionTimestamp == nil {
				return false, nil
			}
		}
		return len(l.Items) >= 1, nil
	})
	if err != nil {
		t.Fatalf("Replace left %s: %v", third.Name, err)
	}
}
