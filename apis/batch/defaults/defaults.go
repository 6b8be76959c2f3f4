// Package defaults applies upstream's batch/v1 defaults (pkg/apis/batch/v1
// SetDefaults_Job and SetDefaults_CronJob), pod templates included.
package defaults

import (
	"math"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	coredefaults "github.com/kite-project/kite/apis/core/defaults"
)

// Job defaults completions and parallelism to 1 when both are unset
// (parallelism alone to 1), backoffLimit to 6 (MaxInt32 with a per-index
// limit), the Job's labels to its template's when it has none,
// completionMode NonIndexed, suspend false, pod failure policy condition
// status True and podReplacementPolicy (Failed with a pod failure policy,
// else TerminatingOrFailed).
func Job(j *batchv1.Job) {
	JobSpec(&j.Spec)
	if l := j.Spec.Template.Labels; l != nil && len(j.Labels) == 0 {
		j.Labels = l
	}
}

// JobSpec applies the defaults of a Job's spec.
func JobSpec(s *batchv1.JobSpec) {
	if s.Completions == nil && s.Parallelism == nil {
		s.Completions = ptr.To[int32](1)
	}
	if s.Parallelism == nil {
		s.Parallelism = ptr.To[int32](1)
	}
	if s.BackoffLimit == nil {
		if s.BackoffLimitPerIndex != nil {
			s.BackoffLimit = ptr.To[int32](math.MaxInt32)
		} else {
			s.BackoffLimit = ptr.To[int32](6)
		}
	}
	if s.CompletionMode == nil {
		s.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
	}
	if s.Suspend == nil {
		s.Suspend = ptr.To(false)
	}
	if p := s.PodFailurePolicy; p != nil {
		for _, rule := range p.Rules {
			for i := range rule.OnPodConditions {
				if rule.OnPodConditions[i].Status == "" {
					rule.OnPodConditions[i].Status = corev1.ConditionTrue
				}
			}
		}
	}
	if s.PodReplacementPolicy == nil {
		if s.PodFailurePolicy != nil {
			s.PodReplacementPolicy = ptr.To(batchv1.Failed)
		} else {
			s.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed)
		}
	}
	coredefaults.PodSpec(&s.Template.Spec)
}

// CronJob defaults concurrencyPolicy to Allow, suspend to false and the
// history limits to 3 successful and 1 failed Job. The job template gets
// only its pod template's defaults, as upstream: the Job's own come when a
// Job is created from it.
func CronJob(c *batchv1.CronJob) {
	if c.Spec.ConcurrencyPolicy == "" {
		c.Spec.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if c.Spec.Suspend == nil {
		c.Spec.Suspend = ptr.To(false)
	}
	if c.Spec.SuccessfulJobsHistoryLimit == nil {
		c.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](3)
	}
	if c.Spec.FailedJobsHistoryLimit == nil {
		c.Spec.FailedJobsHistoryLimit = ptr.To[int32](1)
	}
	coredefaults.PodSpec(&c.Spec.JobTemplate.Spec.Template.Spec)
}
