package validation

import (
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// ValidateJobStatusUpdate checks an update of a Job's status as upstream
// does with JobManagedBy on (GA in 1.37), so that whoever writes it (this
// controller or another, by spec.managedBy) keeps it meaningful: counts
// not negative, uncounted uids unique, the terminal conditions reached
// through their interim ones and kept, counters not decreasing, the index
// lists well-formed, start and completion times consistent. As upstream,
// most rules hold only when the fields they are about change, so a status
// already off (or a spec just scaled down) can still be written.
func ValidateJobStatusUpdate(j, old *batchv1.Job) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&j.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	p := field.NewPath("status")
	s, os := &j.Status, &old.Status
	cp := p.Child("conditions")
	invalid := func(path *field.Path, v any, msg string) { allErrs = append(allErrs, field.Invalid(path, v, msg)) }

	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(s.Active), p.Child("active"))...)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(s.Succeeded), p.Child("succeeded"))...)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(s.Failed), p.Child("failed"))...)
	if s.Ready != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*s.Ready), p.Child("ready"))...)
	}
	if s.Terminating != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*s.Terminating), p.Child("terminating"))...)
	}
	if u := s.UncountedTerminatedPods; u != nil {
		seen := map[types.UID]bool{}
		up := p.Child("uncountedTerminatedPods")
		for _, list := range []struct {
			name string
			uids []types.UID
		}{{"succeeded", u.Succeeded}, {"failed", u.Failed}} {
			for i, uid := range list.uids {
				ip := up.Child(list.name).Index(i)
				switch {
				case uid == "":
					invalid(ip, uid, "must not be empty")
				case seen[uid]:
					allErrs = append(allErrs, field.Duplicate(ip, uid))
				default:
					seen[uid] = true
				}
			}
		}
	}

	complete, failed := conditionTrue(s, batchv1.JobComplete), conditionTrue(s, batchv1.JobFailed)
	failureTarget, met := conditionTrue(s, batchv1.JobFailureTarget), conditionTrue(s, batchv1.JobSuccessCriteriaMet)
	finished := complete || failed
	completeChanged := complete != conditionTrue(os, batchv1.JobComplete)
	failedChanged := failed != conditionTrue(os, batchv1.JobFailed)
	failureTargetChanged := failureTarget != conditionTrue(os, batchv1.JobFailureTarget)
	metChanged := met != conditionTrue(os, batchv1.JobSuccessCriteriaMet)
	finishedChanged := finished != (conditionTrue(os, batchv1.JobComplete) || conditionTrue(os, batchv1.JobFailed))
	activeChanged := s.Active != os.Active
	startChanged := !ptr.Equal(s.StartTime, os.StartTime)
	completionChanged := !ptr.Equal(s.CompletionTime, os.CompletionTime)
	uncountedChanged := !apiequality.Semantic.DeepEqual(s.UncountedTerminatedPods, os.UncountedTerminatedPods)
	terminatingChanged := !ptr.Equal(s.Terminating, os.Terminating)
	readyChanged := !ptr.Equal(s.Ready, os.Ready)

	if complete && failed && (completeChanged || failedChanged) {
		invalid(cp, field.OmitValueType{}, "cannot set Complete=True and Failed=true conditions")
	}
	if complete && failureTarget && (completeChanged || failureTargetChanged) {
		invalid(cp, field.OmitValueType{}, "cannot set Complete=True and FailureTarget=true conditions")
	}
	if s.CompletionTime != nil && !complete && (completeChanged || completionChanged) {
		invalid(p.Child("completionTime"), s.CompletionTime, "cannot set completionTime when there is no Complete=True condition")
	}
	if s.CompletionTime == nil && complete && (completeChanged || completionChanged) {
		allErrs = append(allErrs, field.Required(p.Child("completionTime"), "completionTime is required for Complete jobs"))
	}
	if s.StartTime != nil && s.CompletionTime != nil && s.CompletionTime.Before(s.StartTime) && (startChanged || completionChanged) {
		invalid(p.Child("completionTime"), s.CompletionTime, "completionTime cannot be set before startTime")
	}
	if failed && !failureTarget && (failedChanged || failureTargetChanged) {
		invalid(cp, field.OmitValueType{}, "cannot set Failed=True condition without the FailureTarget=true condition")
	}
	if complete && !met && (completeChanged || metChanged) {
		invalid(cp, field.OmitValueType{}, "cannot set Complete=True condition without the SuccessCriteriaMet=true condition")
	}
	if finished && s.Active > 0 && (finishedChanged || activeChanged) {
		invalid(p.Child("active"), s.Active, "active>0 is invalid for finished job")
	}
	if finished && s.StartTime == nil && (finishedChanged || startChanged) {
		allErrs = append(allErrs, field.Required(p.Child("startTime"), "startTime is required for finished job"))
	}
	if u := s.UncountedTerminatedPods; finished && u != nil && len(u.Succeeded)+len(u.Failed) > 0 && (finishedChanged || uncountedChanged) {
		invalid(p.Child("uncountedTerminatedPods"), u, "uncountedTerminatedPods needs to be empty for finished job")
	}
	if finished && ptr.Deref(s.Terminating, 0) > 0 && (finishedChanged || terminatingChanged) {
		invalid(p.Child("terminating"), s.Terminating, "terminating>0 is invalid for finished job")
	}
	if s.Ready != nil && *s.Ready > s.Active && (readyChanged || activeChanged) {
		invalid(p.Child("ready"), *s.Ready, "cannot set more ready pods than active")
	}
	allErrs = append(allErrs, validateIndexesStatus(j, old, p)...)
	if met && failed {
		invalid(cp, field.OmitValueType{}, "cannot set SuccessCriteriaMet=True and Failed=true conditions")
	}
	if met && failureTarget {
		invalid(cp, field.OmitValueType{}, "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions")
	}
	if j.Spec.SuccessPolicy != nil && !met && complete {
		invalid(cp, field.OmitValueType{}, "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True")
	}

	// Transitions.
	for _, t := range []batchv1.JobConditionType{batchv1.JobFailed, batchv1.JobComplete, batchv1.JobFailureTarget} {
		if conditionTrue(os, t) && !conditionTrue(s, t) {
			invalid(cp, field.OmitValueType{}, fmt.Sprintf("cannot disable the terminal %s=True condition", t))
		}
	}
	if s.Failed < os.Failed {
		invalid(p.Child("failed"), s.Failed, "cannot decrease the failed counter")
	}
	isIndexed := j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == batchv1.IndexedCompletion
	// An Indexed Job scaled down (completions with parallelism) may lose
	// succeeded indexes.
	if s.Succeeded < os.Succeeded && (!isIndexed || !ptr.Equal(j.Spec.Completions, j.Spec.Parallelism)) {
		invalid(p.Child("succeeded"), s.Succeeded, "cannot decrease the succeeded counter")
	}
	if os.CompletionTime != nil && s.CompletionTime != nil && !ptr.Equal(s.CompletionTime, os.CompletionTime) {
		invalid(p.Child("completionTime"), s.CompletionTime, "completionTime cannot be mutated")
	}
	if os.StartTime != nil && startChanged && !ptr.Deref(j.Spec.Suspend, false) {
		allErrs = append(allErrs, field.Required(p.Child("startTime"), "startTime cannot be removed for unsuspended job"))
	}
	if conditionTrue(os, batchv1.JobSuccessCriteriaMet) && !met {
		invalid(cp, field.OmitValueType{}, "cannot disable the SuccessCriteriaMet=True condition")
	}
	if conditionTrue(os, batchv1.JobComplete) && !conditionTrue(os, batchv1.JobSuccessCriteriaMet) && met {
		invalid(cp, field.OmitValueType{}, "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions")
	}
	return allErrs
}

func conditionTrue(s *batchv1.JobStatus, t batchv1.JobConditionType) bool {
	for _, c := range s.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// validateIndexesStatus checks completedIndexes and failedIndexes, each
// when it changes, as upstream: well-formed, failedIndexes only with
// backoffLimitPerIndex, completedIndexes only for Indexed Jobs, the two
// disjoint.
func validateIndexesStatus(j, old *batchv1.Job, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	s := &j.Status
	completedChanged := s.CompletedIndexes != old.Status.CompletedIndexes
	failedChanged := !ptr.Equal(s.FailedIndexes, old.Status.FailedIndexes)
	isIndexed := j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == batchv1.IndexedCompletion
	if j.Spec.Completions != nil && completedChanged {
		if _, err := CountIndexes(s.CompletedIndexes, *j.Spec.Completions); err != nil {
			allErrs = append(allErrs, field.Invalid(p.Child("completedIndexes"), s.CompletedIndexes, fmt.Sprintf("error parsing completedIndexes: %s", err.Error())))
		}
	}
	if j.Spec.Completions != nil && j.Spec.BackoffLimitPerIndex != nil && s.FailedIndexes != nil && failedChanged {
		if _, err := CountIndexes(*s.FailedIndexes, *j.Spec.Completions); err != nil {
			allErrs = append(allErrs, field.Invalid(p.Child("failedIndexes"), s.FailedIndexes, fmt.Sprintf("error parsing failedIndexes: %s", err.Error())))
		}
	}
	if s.CompletedIndexes != "" && !isIndexed && completedChanged {
		allErrs = append(allErrs, field.Invalid(p.Child("completedIndexes"), s.CompletedIndexes, "cannot set non-empty completedIndexes when non-indexed completion mode"))
	}
	if j.Spec.BackoffLimitPerIndex == nil && s.FailedIndexes != nil && failedChanged {
		allErrs = append(allErrs, field.Invalid(p.Child("failedIndexes"), *s.FailedIndexes, "cannot set non-null failedIndexes when backoffLimitPerIndex is null"))
	}
	if j.Spec.Completions != nil && s.FailedIndexes != nil && (completedChanged || failedChanged) {
		if ix, ok := firstOverlap(s.CompletedIndexes, *s.FailedIndexes, *j.Spec.Completions); ok {
			allErrs = append(allErrs, field.Invalid(p.Child("failedIndexes"), *s.FailedIndexes, fmt.Sprintf("failedIndexes and completedIndexes overlap at index: %d", ix)))
		}
	}
	return allErrs
}

// firstOverlap is the lowest index in both lists, skipping intervals that
// do not parse (reported on their own).
func firstOverlap(a, b string, completions int32) (int32, bool) {
	if a == "" || b == "" {
		return 0, false
	}
	set := func(s string) map[int32]bool {
		out := map[int32]bool{}
		for _, part := range strings.Split(s, ",") {
			if x, y, err := parseIndexInterval(part, completions); err == nil {
				for i := x; i <= y; i++ {
					out[i] = true
				}
			}
		}
		return out
	}
	inA := set(a)
	found, first := false, int32(0)
	for i := range set(b) {
		if inA[i] && (!found || i < first) {
			found, first = true, i
		}
	}
	return first, found
}
