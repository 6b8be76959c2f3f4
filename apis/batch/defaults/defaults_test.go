package defaults

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"
)

func TestJob(t *testing.T) {
	tests := []struct {
		name                    string
		completions, parallel   *int32
		wantCompl, wantParallel *int32
	}{
		{"neither: both 1", nil, nil, ptr.To[int32](1), ptr.To[int32](1)},
		{"completions only: parallelism 1", ptr.To[int32](5), nil, ptr.To[int32](5), ptr.To[int32](1)},
		{"parallelism only: completions stay unset (work queue)", nil, ptr.To[int32](3), nil, ptr.To[int32](3)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := &batchv1.Job{Spec: batchv1.JobSpec{Completions: tc.completions, Parallelism: tc.parallel}}
			Job(j)
			if !ptr.Equal(j.Spec.Completions, tc.wantCompl) || !ptr.Equal(j.Spec.Parallelism, tc.wantParallel) {
				t.Errorf("completions %v parallelism %v", j.Spec.Completions, j.Spec.Parallelism)
			}
			if *j.Spec.BackoffLimit != 6 || *j.Spec.CompletionMode != batchv1.NonIndexedCompletion || *j.Spec.Suspend ||
				*j.Spec.PodReplacementPolicy != batchv1.TerminatingOrFailed {
				t.Errorf("defaults: %+v", j.Spec)
			}
		})
	}
	perIndex := &batchv1.Job{Spec: batchv1.JobSpec{BackoffLimitPerIndex: ptr.To[int32](1), PodFailurePolicy: &batchv1.PodFailurePolicy{}}}
	Job(perIndex)
	if *perIndex.Spec.BackoffLimit != 2147483647 || *perIndex.Spec.PodReplacementPolicy != batchv1.Failed {
		t.Errorf("per-index: backoffLimit %d replacement %s", *perIndex.Spec.BackoffLimit, *perIndex.Spec.PodReplacementPolicy)
	}
}

func TestCronJob(t *testing.T) {
	c := &batchv1.CronJob{}
	CronJob(c)
	if c.Spec.ConcurrencyPolicy != batchv1.AllowConcurrent || *c.Spec.Suspend || *c.Spec.SuccessfulJobsHistoryLimit != 3 ||
		*c.Spec.FailedJobsHistoryLimit != 1 || c.Spec.JobTemplate.Spec.BackoffLimit != nil {
		t.Errorf("defaults: %+v", c.Spec)
	}
}
