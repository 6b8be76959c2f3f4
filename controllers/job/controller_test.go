package job_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/controllers/job"
)

// outcome decides how the stand-in node ends a pod: its phase and exit
// code.
type outcome func(p *corev1.Pod) (corev1.PodPhase, int32)

func start(t *testing.T, end outcome) (kubernetes.Interface, string) {
	t.Helper()
	return startWith(t, end, job.Options{})
}

// startWith is start with the controller's options (its client and
// back-off are the fixture's).
func startWith(t *testing.T, end outcome, opts job.Options) (kubernetes.Interface, string) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "job-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if opts.Client == nil {
		opts.Client = cs
	}
	opts.BackoffBase, opts.BackoffLimit = 20*time.Millisecond, 100*time.Millisecond
	jc, err := job.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { jc.Run(ctx) })
	wg.Go(func() { runNode(ctx, cs, ns.Name, end) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return cs, ns.Name
}

// runNode ends each new pod of ns as end says, through pods/status, as a
// kubelet would; end returning Running leaves it running.
func runNode(ctx context.Context, cs kubernetes.Interface, ns string, end outcome) {
	for ctx.Err() == nil {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, p := range pods.Items {
				if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodRunning {
					continue
				}
				phase, code := end(&p)
				p.Status.Phase = phase
				state := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
				if phase != corev1.PodRunning {
					state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
				}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name, Image: p.Spec.Containers[0].Image, State: state}}
				_, _ = cs.CoreV1().Pods(ns).UpdateStatus(ctx, &p, metav1.UpdateOptions{})
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(30 * time.Millisecond):
		}
	}
}

func newJob(name string, mutate func(*batchv1.Job)) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}}}
	if mutate != nil {
		mutate(j)
	}
	return j
}

func waitCondition(t *testing.T, cs kubernetes.Interface, ns, name string, ct batchv1.JobConditionType) *batchv1.Job {
	t.Helper()
	var got *batchv1.Job
	err := wait.PollUntilContextTimeout(context.Background(), 30*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		j, err := cs.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = j
		for _, c := range j.Status.Conditions {
			if c.Type == ct && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("job %s never %s: %v; status %+v", name, ct, err, got.Status)
	}
	return got
}

// waitEvent waits for an event about the Job name of the type and reason
// whose message starts with msg.
func waitEvent(t *testing.T, cs kubernetes.Interface, ns, name, typ, reason, msg string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 30*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		events, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Kind == "Job" && e.InvolvedObject.Name == name && e.Type == typ && e.Reason == reason && strings.HasPrefix(e.Message, msg) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("no %s event %s %q about job %s: %v", typ, reason, msg, name, err)
	}
}

func succeed(*corev1.Pod) (corev1.PodPhase, int32) { return corev1.PodSucceeded, 0 }
func fail(*corev1.Pod) (corev1.PodPhase, int32)    { return corev1.PodFailed, 1 }

func noFinalizers(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 30*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("pods keep the job-tracking finalizer: %v", err)
	}
}

func TestJobRunsToCompletion(t *testing.T) {
	cs, ns := start(t, succeed)
	if _, err := cs.BatchV1().Jobs(ns).Create(context.Background(), newJob("pi", func(j *batchv1.Job) {
		j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](4), ptr.To[int32](2)
	}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	j := waitCondition(t, cs, ns, "pi", batchv1.JobComplete)
	if j.Status.Succeeded != 4 || j.Status.Active != 0 || j.Status.CompletionTime == nil || j.Status.StartTime == nil {
		t.Errorf("status %+v", j.Status)
	}
	if c := waitCondition(t, cs, ns, "pi", batchv1.JobSuccessCriteriaMet); c == nil {
		t.Error("no SuccessCriteriaMet")
	}
	pods, _ := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if len(pods.Items) != 4 {
		t.Errorf("%d pods for 4 completions", len(pods.Items))
	}
	noFinalizers(t, cs, ns)
	waitEvent(t, cs, ns, "pi", corev1.EventTypeNormal, "Completed", "Job completed")
	waitEvent(t, cs, ns, "pi", corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: pi-")
	// status.successful is selectable, as upstream.
	for sel, want := range map[string]int{"status.successful=4": 1, "status.successful=3": 0} {
		jobs, err := cs.BatchV1().Jobs(ns).List(context.Background(), metav1.ListOptions{FieldSelector: sel})
		if err != nil || len(jobs.Items) != want {
			t.Errorf("jobs with %s: %v, %v; want %d", sel, jobs, err, want)
		}
	}
}

func TestJobFailsByBackoffLimit(t *testing.T) {
	cs, ns := start(t, fail)
	if _, err := cs.BatchV1().Jobs(ns).Create(context.Background(), newJob("flaky", func(j *batchv1.Job) {
		j.Spec.BackoffLimit = ptr.To[int32](2)
	}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	j := waitCondition(t, cs, ns, "flaky", batchv1.JobFailed)
	var failed *batchv1.JobCondition
	for i := range j.Status.Conditions {
		if j.Status.Conditions[i].Type == batchv1.JobFailed {
			failed = &j.Status.Conditions[i]
		}
	}
	if j.Status.Failed != 3 || failed.Reason != job.ReasonBackoffLimitExceeded || failed.Message != "Job has reached the specified backoff limit" {
		t.Errorf("failed %d, condition %+v", j.Status.Failed, failed)
	}
	noFinalizers(t, cs, ns)
}

func TestIndexedJob(t *testing.T) {
	cs, ns := start(t, succeed)
	mode := batchv1.IndexedCompletion
	if _, err := cs.BatchV1().Jobs(ns).Create(context.Background(), newJob("idx", func(j *batchv1.Job) {
		j.Spec.Completions, j.Spec.Parallelism, j.Spec.CompletionMode = ptr.To[int32](3), ptr.To[int32](3), &mode
	}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	j := waitCondition(t, cs, ns, "idx", batchv1.JobComplete)
	if j.Status.CompletedIndexes != "0-2" {
		t.Errorf("completedIndexes %q", j.Status.CompletedIndexes)
	}
	pods, _ := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	var idx []string
	for _, p := range pods.Items {
		idx = append(idx, p.Annotations[batchv1.JobCompletionIndexAnnotation])
		if p.Labels[batchv1.JobCompletionIndexAnnotation] == "" || len(p.Spec.Containers[0].Env) == 0 {
			t.Errorf("pod %s: labels %v env %v", p.Name, p.Labels, p.Spec.Containers[0].Env)
		}
	}
	slices.Sort(idx)
	if !slices.Equal(idx, []string{"0", "1", "2"}) {
		t.Errorf("indexes %v", idx)
	}
}

func TestPodFailurePolicyFailsTheJob(t *testing.T) {
	cs, ns := start(t, func(*corev1.Pod) (corev1.PodPhase, int32) { return corev1.PodFailed, 42 })
	if _, err := cs.BatchV1().Jobs(ns).Create(context.Background(), newJob("fatal", func(j *batchv1.Job) {
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionFailJob,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}}}}
	}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	j := waitCondition(t, cs, ns, "fatal", batchv1.JobFailed)
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Reason != job.ReasonPodFailurePolicy {
			t.Errorf("Failed reason %q, message %q", c.Reason, c.Message)
		}
	}
	if j.Status.Failed != 1 {
		t.Errorf("failed = %d, want 1 (no retry after FailJob)", j.Status.Failed)
	}
}

func TestActiveDeadlineAndTTL(t *testing.T) {
	cs, ns := start(t, func(*corev1.Pod) (corev1.PodPhase, int32) { return corev1.PodRunning, 0 })
	if _, err := cs.BatchV1().Jobs(ns).Create(context.Background(), newJob("slow", func(j *batchv1.Job) {
		j.Spec.ActiveDeadlineSeconds = ptr.To[int64](1)
		j.Spec.TTLSecondsAfterFinished = ptr.To[int32](1)
	}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := cs.BatchV1().Jobs(ns).Watch(context.Background(), metav1.ListOptions{FieldSelector: "metadata.name=slow"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	j := waitCondition(t, cs, ns, "slow", batchv1.JobFailed)
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Reason != job.ReasonDeadlineExceeded {
			t.Errorf("Failed reason %q", c.Reason)
		}
	}
	// Deleted after its TTL in the foreground, as upstream's
	// ttl-after-finished controller: the garbage collector's
	// foregroundDeletion finalizer shows, then the Job goes.
	var foreground bool
	timeout := time.After(10 * time.Second)
	for done := false; !done; {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch ended")
			}
			if got, isJob := ev.Object.(*batchv1.Job); isJob && got.DeletionTimestamp != nil && slices.Contains(got.Finalizers, metav1.FinalizerDeleteDependents) {
				foreground = true
			}
			done = ev.Type == watch.Deleted
		case <-timeout:
			t.Fatal("job not deleted after its TTL")
		}
	}
	if !foreground {
		t.Error("job deleted, but not in the foreground")
	}
}

// indexOf is the completion index of a pod the controller made.
func indexOf(p *corev1.Pod) string { return p.Annotations[batchv1.JobCompletionIndexAnnotation] }

func jobCondition(j *batchv1.Job, ct batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range j.Status.Conditions {
		if j.Status.Conditions[i].Type == ct {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}

func TestSuccessPolicyCompletesTheJob(t *testing.T) {
	// Index 1 succeeds; the others would run for ever.
	cs, ns := start(t, func(p *corev1.Pod) (corev1.PodPhase, int32) {
		if indexOf(p) == "1" {
			return corev1.PodSucceeded, 0
		}
		return corev1.PodRunning, 0
	})
	mode := batchv1.IndexedCompletion
	if _, err := cs.BatchV1().Jobs(ns).Create(context.Background(), newJob("leader", func(j *batchv1.Job) {
		j.Spec.Completions, j.Spec.Parallelism, j.Spec.CompletionMode = ptr.To[int32](4), ptr.To[int32](4), &mode
		j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{
			{SucceededIndexes: ptr.To("0,3")}, {SucceededIndexes: ptr.To("1"), SucceededCount: ptr.To[int32](1)}}}
	}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	j := waitCondition(t, cs, ns, "leader", batchv1.JobComplete)
	for _, ct := range []batchv1.JobConditionType{batchv1.JobSuccessCriteriaMet, batchv1.JobComplete} {
		if c := jobCondition(j, ct); c == nil || c.Reason != job.ReasonSuccessPolicy || c.Message != "Matched rules at index 1" {
			t.Errorf("%s condition %+v", ct, c)
		}
	}
	if j.Status.CompletedIndexes != "1" || j.Status.Succeeded != 1 || j.Status.Active != 0 || j.Status.CompletionTime == nil {
		t.Errorf("status %+v", j.Status)
	}
	// The other indexes' pods were stopped: none is left.
	err := wait.PollUntilContextTimeout(context.Background(), 30*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if indexOf(&p) != "1" {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("pods of the other indexes not deleted: %v", err)
	}
}

// podsByIndex lists ns's pods by completion index.
func podsByIndex(t *testing.T, cs kubernetes.Interface, ns string) map[string][]corev1.Pod {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]corev1.Pod{}
	for _, p := range pods.Items {
		out[indexOf(&p)] = append(out[indexOf(&p)], p)
	}
	return out
}

func TestBackoffLimitPerIndex(t *testing.T) {
	// Index 1 always fails; the others succeed.
	cs, ns := start(t, func(p *corev1.Pod) (corev1.PodPhase, int32) {
		if indexOf(p) == "1" {
			return corev1.PodFailed, 1
		}
		return corev1.PodSucceeded, 0
	})
	mode := batchv1.IndexedCompletion
	if _, err := cs.BatchV1().Jobs(ns).Create(context.Background(), newJob("per-index", func(j *batchv1.Job) {
		j.Spec.Completions, j.Spec.Parallelism, j.Spec.CompletionMode = ptr.To[int32](3), ptr.To[int32](3), &mode
		j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
	}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	j := waitCondition(t, cs, ns, "per-index", batchv1.JobFailed)
	if c := jobCondition(j, batchv1.JobFailed); c.Reason != batchv1.JobReasonFailedIndexes || c.Message != "Job has failed indexes" {
		t.Errorf("Failed condition %+v", c)
	}
	waitEvent(t, cs, ns, "per-index", corev1.EventTypeWarning, batchv1.JobReasonFailedIndexes, "Job has failed indexes")
	if j.Spec.BackoffLimit == nil || *j.Spec.BackoffLimit != math.MaxInt32 {
		t.Errorf("backoffLimit defaulted to %v, want MaxInt32 with a per-index limit", j.Spec.BackoffLimit)
	}
	if ptr.Deref(j.Status.FailedIndexes, "<nil>") != "1" || j.Status.CompletedIndexes != "0,2" || j.Status.Failed != 2 || j.Status.Succeeded != 2 {
		t.Errorf("status %+v", j.Status)
	}
	// Index 1 ran twice (its first try and one retry), the retry carrying
	// the index's failure count.
	byIndex := podsByIndex(t, cs, ns)
	if len(byIndex["0"]) != 1 || len(byIndex["2"]) != 1 || len(byIndex["1"]) != 2 {
		t.Fatalf("pods per index %v", byIndex)
	}
	var counts []string
	for _, p := range byIndex["1"] {
		counts = append(counts, p.Annotations[batchv1.JobIndexFailureCountAnnotation])
	}
	slices.Sort(counts)
	if !slices.Equal(counts, []string{"0", "1"}) {
		t.Errorf("failure counts of index 1's pods %v, want 0 and 1", counts)
	}
	noFinalizers(t, cs, ns)
}

func TestMaxFailedIndexesAndFailIndex(t *testing.T) {
	// Indexes 0 and 1 fail with exit code 42, which fails the index at
	// once; 2 and 3 would run for ever.
	cs, ns := start(t, func(p *corev1.Pod) (corev1.PodPhase, int32) {
		if i := indexOf(p); i == "0" || i == "1" {
			return corev1.PodFailed, 42
		}
		return corev1.PodRunning, 0
	})
	mode := batchv1.IndexedCompletion
	if _, err := cs.BatchV1().Jobs(ns).Create(context.Background(), newJob("max-failed", func(j *batchv1.Job) {
		j.Spec.Completions, j.Spec.Parallelism, j.Spec.CompletionMode = ptr.To[int32](4), ptr.To[int32](4), &mode
		j.Spec.BackoffLimitPerIndex, j.Spec.MaxFailedIndexes = ptr.To[int32](5), ptr.To[int32](1)
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionFailIndex,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}}}}
	}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	j := waitCondition(t, cs, ns, "max-failed", batchv1.JobFailed)
	if c := jobCondition(j, batchv1.JobFailed); c.Reason != batchv1.JobReasonMaxFailedIndexesExceeded || c.Message != "Job has exceeded the specified maximal number of failed indexes" {
		t.Errorf("Failed condition %+v", c)
	}
	if ptr.Deref(j.Status.FailedIndexes, "<nil>") != "0,1" || j.Status.Active != 0 {
		t.Errorf("status %+v", j.Status)
	}
	// FailIndex: no retry of the failed indexes, despite backoffLimitPerIndex 5.
	if byIndex := podsByIndex(t, cs, ns); len(byIndex["0"]) != 1 || len(byIndex["1"]) != 1 {
		t.Errorf("pods per index %v", byIndex)
	}
}

func TestJobManagedElsewhereIsLeftAlone(t *testing.T) {
	cs, ns := start(t, succeed)
	ctx := context.Background()
	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, newJob("foreign", func(j *batchv1.Job) {
		j.Spec.ManagedBy = ptr.To("example.com/other-controller")
	}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A Job naming this controller explicitly runs; once it completes, the
	// controller has long seen the foreign one.
	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, newJob("ours", func(j *batchv1.Job) {
		j.Spec.ManagedBy = ptr.To(batchv1.JobControllerName)
	}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, cs, ns, "ours", batchv1.JobComplete)
	foreign, err := cs.BatchV1().Jobs(ns).Get(ctx, "foreign", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(foreign.Status, batchv1.JobStatus{}) {
		t.Errorf("the controller wrote the foreign Job's status: %+v", foreign.Status)
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=foreign"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Errorf("%d pods created for the foreign Job", len(pods.Items))
	}
	// managedBy cannot change once set.
	foreign.Spec.ManagedBy = ptr.To(batchv1.JobControllerName)
	if _, err := cs.BatchV1().Jobs(ns).Update(ctx, foreign, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.managedBy: Invalid value") {
		t.Errorf("managedBy changed: %v", err)
	}
}

func TestJobValidationThroughTheAPI(t *testing.T) {
	cs, ns := start(t, succeed)
	mode := batchv1.IndexedCompletion
	tests := []struct {
		name   string
		mutate func(*batchv1.Job)
		want   string
	}{
		{"successPolicy on a NonIndexed Job", func(j *batchv1.Job) {
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededCount: ptr.To[int32](1)}}}
		}, "spec.successPolicy: Invalid value"},
		{"succeededIndexes past completions", func(j *batchv1.Job) {
			j.Spec.CompletionMode, j.Spec.Completions = &mode, ptr.To[int32](2)
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0-3")}}}
		}, `error parsing succeededIndexes: too large index: "3"`},
		{"maxFailedIndexes without backoffLimitPerIndex", func(j *batchv1.Job) {
			j.Spec.CompletionMode, j.Spec.Completions, j.Spec.MaxFailedIndexes = &mode, ptr.To[int32](2), ptr.To[int32](1)
		}, "spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified"},
		{"managedBy not a domain-prefixed path", func(j *batchv1.Job) { j.Spec.ManagedBy = ptr.To("kueue") }, "must be a domain-prefixed path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cs.BatchV1().Jobs(ns).Create(context.Background(), newJob("bad", tc.mutate), metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("create: %v, want 422 with %q", err, tc.want)
			}
		})
	}
}

func TestJobReleasesAndAdoptsPodsBySelector(t *testing.T) {
	cs, ns := start(t, func(*corev1.Pod) (corev1.PodPhase, int32) { return corev1.PodRunning, 0 })
	ctx := context.Background()
	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, newJob("adopter", func(j *batchv1.Job) {
		j.Spec.ManualSelector = ptr.To(true)
		j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "adopt"}}
		j.Spec.Template.Labels = map[string]string{"app": "adopt"}
	}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	j, err := cs.BatchV1().Jobs(ns).Get(ctx, "adopter", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owned := func(p *corev1.Pod) bool {
		ref := metav1.GetControllerOf(p)
		return ref != nil && ref.UID == j.UID && slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer)
	}
	// until polls the namespace's pods until cond holds.
	until := func(what string, cond func(pods []corev1.Pod) bool) []corev1.Pod {
		t.Helper()
		var pods []corev1.Pod
		err := wait.PollUntilContextTimeout(ctx, 30*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			pods = list.Items
			return cond(pods), nil
		})
		if err != nil {
			t.Fatalf("%s: %v; pods %+v", what, err, pods)
		}
		return pods
	}
	first := until("the Job's pod", func(pods []corev1.Pod) bool { return len(pods) == 1 && owned(&pods[0]) })[0]
	relabel := func(app string) {
		t.Helper()
		patch := fmt.Sprintf(`{"metadata":{"labels":{"app":%q}}}`, app)
		if _, err := cs.CoreV1().Pods(ns).Patch(ctx, first.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// No longer selected: released (no owner, no finalizer), and replaced.
	relabel("elsewhere")
	until("release and replacement", func(pods []corev1.Pod) bool {
		var released, replacement bool
		for _, p := range pods {
			switch {
			case p.UID == first.UID:
				released = metav1.GetControllerOf(&p) == nil && !slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) && p.DeletionTimestamp == nil
			case owned(&p) && p.DeletionTimestamp == nil:
				replacement = true
			}
		}
		return released && replacement
	})

	// Selected again: adopted, with the finalizer; one of the two pods is
	// then one too many and goes.
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + first.Name})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	relabel("adopt")
	adopted := false
	timeout := time.After(10 * time.Second)
	for !adopted {
		select {
		case ev := <-w.ResultChan():
			if p, ok := ev.Object.(*corev1.Pod); ok && owned(p) {
				adopted = true
			}
		case <-timeout:
			t.Fatal("orphan never adopted")
		}
	}
	until("one pod left", func(pods []corev1.Pod) bool {
		n := 0
		for _, p := range pods {
			if p.Labels["app"] == "adopt" && owned(&p) && p.DeletionTimestamp == nil {
				n++
			}
		}
		return n == 1 && len(pods) == 1
	})
}

func TestSuspendStopsPodsWithoutCountingFailures(t *testing.T) {
	cs, ns := start(t, func(*corev1.Pod) (corev1.PodPhase, int32) { return corev1.PodRunning, 0 })
	ctx := context.Background()
	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, newJob("pausing", func(j *batchv1.Job) {
		j.Spec.Parallelism, j.Spec.Completions = ptr.To[int32](2), ptr.To[int32](2)
	}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var j *batchv1.Job
	err := wait.PollUntilContextTimeout(ctx, 30*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		j, err = cs.BatchV1().Jobs(ns).Get(ctx, "pausing", metav1.GetOptions{})
		return err == nil && j.Status.Active == 2, err
	})
	if err != nil {
		t.Fatalf("never 2 active: %v", err)
	}
	j.Spec.Suspend = ptr.To(true)
	if _, err := cs.BatchV1().Jobs(ns).Update(ctx, j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	j = waitCondition(t, cs, ns, "pausing", batchv1.JobSuspended)
	err = wait.PollUntilContextTimeout(ctx, 30*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, err
	})
	if err != nil {
		t.Errorf("pods left while suspended: %v", err)
	}
	// The status follows the controller's cache, which sees the deletions
	// one by one.
	err = wait.PollUntilContextTimeout(ctx, 30*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		j, err = cs.BatchV1().Jobs(ns).Get(ctx, "pausing", metav1.GetOptions{})
		return err == nil && j.Status.Active == 0, err
	})
	if err != nil {
		t.Errorf("still active while suspended: %v", err)
	}
	if j.Status.Failed != 0 || j.Status.Active != 0 || j.Status.StartTime != nil {
		t.Errorf("suspended status %+v, want no failures, none active, no startTime", j.Status)
	}
}

func TestOrphanPodsLoseTheTrackingFinalizer(t *testing.T) {
	cs, ns := start(t, func(*corev1.Pod) (corev1.PodPhase, int32) { return corev1.PodRunning, 0 })
	ctx := context.Background()
	// A pod with the finalizer and no owner at all.
	stray := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stray", Finalizers: []string{batchv1.JobTrackingFinalizer}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, stray, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A Job's pod, orphaned by deleting the Job with propagation Orphan
	// (the garbage collector removes its owner reference).
	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, newJob("orphaning", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 30*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=orphaning"})
		return err == nil && len(pods.Items) == 1 && slices.Contains(pods.Items[0].Finalizers, batchv1.JobTrackingFinalizer), err
	})
	if err != nil {
		t.Fatalf("the Job's pod never came: %v", err)
	}
	orphan := metav1.DeletePropagationOrphan
	if err := cs.BatchV1().Jobs(ns).Delete(ctx, "orphaning", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	// The Job's pod ends orphaned or, where the garbage collector saw it
	// only after the Job was gone, collected: either way not held by the
	// finalizer.
	err = wait.PollUntilContextTimeout(ctx, 30*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		stray := false
		for _, p := range pods.Items {
			if slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) || len(p.OwnerReferences) != 0 || p.DeletionTimestamp != nil {
				return false, nil
			}
			stray = stray || p.Name == "stray"
		}
		return stray, nil
	})
	if err != nil {
		pods, _ := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		for _, p := range pods.Items {
			t.Logf("pod %s: owners %v finalizers %v", p.Name, p.OwnerReferences, p.Finalizers)
		}
		t.Errorf("orphans keep the job-tracking finalizer: %v", err)
	}
}

func TestPodReplacementPolicyFailedWaitsForTerminatingPods(t *testing.T) {
	cs, ns := start(t, func(*corev1.Pod) (corev1.PodPhase, int32) { return corev1.PodRunning, 0 })
	ctx := context.Background()
	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, newJob("patient", func(j *batchv1.Job) {
		j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
	}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	jobStatus := func(what string, cond func(s batchv1.JobStatus) bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 30*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			j, err := cs.BatchV1().Jobs(ns).Get(ctx, "patient", metav1.GetOptions{})
			return err == nil && cond(j.Status), err
		})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	jobStatus("one active", func(s batchv1.JobStatus) bool { return s.Active == 1 })
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods %v, %v", pods, err)
	}
	first := pods.Items[0]
	// Deleted, it terminates (the job-tracking finalizer keeps it) and is
	// not replaced yet.
	if err := cs.CoreV1().Pods(ns).Delete(ctx, first.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	jobStatus("one terminating", func(s batchv1.JobStatus) bool { return ptr.Deref(s.Terminating, 0) == 1 && s.Active == 0 })
	if pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err != nil || len(pods.Items) != 1 {
		t.Fatalf("replaced while terminating: %d pods, %v", len(pods.Items), err)
	}
	// Once it has failed, as a kubelet reports it, it is counted and
	// replaced.
	p, err := cs.CoreV1().Pods(ns).Get(ctx, first.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodFailed
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	jobStatus("failed once and replaced", func(s batchv1.JobStatus) bool { return s.Failed == 1 && s.Active == 1 })
}

func TestUncountedPodsAreBounded(t *testing.T) {
	cs, ns := startWith(t, succeed, job.Options{MaxUncountedPods: 2})
	ctx := context.Background()
	w, err := cs.BatchV1().Jobs(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=wide"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, newJob("wide", func(j *batchv1.Job) {
		j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](7), ptr.To[int32](7)
	}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev := <-w.ResultChan():
			j, ok := ev.Object.(*batchv1.Job)
			if !ok {
				t.Fatalf("watch event %v", ev)
			}
			if u := j.Status.UncountedTerminatedPods; u != nil && len(u.Succeeded)+len(u.Failed) > 2 {
				t.Fatalf("%d uncounted pods, more than the bound 2", len(u.Succeeded)+len(u.Failed))
			}
			if condition := jobCondition(j, batchv1.JobComplete); condition != nil && condition.Status == corev1.ConditionTrue {
				if j.Status.Succeeded != 7 {
					t.Errorf("succeeded %d, want 7", j.Status.Succeeded)
				}
				// Successes left for a later sync still count: no pod
				// is made for them.
				if pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err != nil || len(pods.Items) != 7 {
					t.Errorf("%d pods for 7 completions (%v)", len(pods.Items), err)
				}
				noFinalizers(t, cs, ns)
				return
			}
		case <-timeout:
			t.Fatal("job never completed")
		}
	}
}
