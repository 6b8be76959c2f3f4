// Package validation checks batch/v1 objects (Jobs, CronJobs) as
// upstream's pkg/apis/batch/validation does, with its field paths and
// messages.
//
// Left out from upstream: the warnings on spec.template.
package validation

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	corevalidation "github.com/kite-project/kite/apis/core/validation"
)

// Upstream's labels and limits.
const (
	// LegacyControllerUIDLabel and LegacyJobNameLabel are the unprefixed
	// labels a Job's pods still carry beside batch.kubernetes.io/'s.
	LegacyControllerUIDLabel = "controller-uid"
	LegacyJobNameLabel       = "job-name"

	maxParallelismForIndexedJob = 100000
	// Beyond completionsSoftLimit completions, backoffLimitPerIndex
	// needs maxFailedIndexes and both it and parallelism are bounded by
	// the lower limits.
	maxFailedIndexesForIndexedJob           = 100000
	completionsSoftLimit                    = 100000
	parallelismLimitForHighCompletions      = 10000
	maxFailedIndexesLimitForHighCompletions = 10000

	// maxSuccessPolicyRules and maxSucceededIndexesLength bound a
	// successPolicy, as upstream.
	maxSuccessPolicyRules = 20
	maxManagedByLength    = 63

	maxPodFailurePolicyRules                   = 20
	maxPodFailurePolicyOnExitCodesValues       = 255
	maxPodFailurePolicyOnPodConditionsPatterns = 20
	maxSucceededIndexesLength                  = 64 * 1024
)

// ValidateJob checks a Job on create: metadata, the generated selector's
// labels (unless manualSelector) and the spec.
func ValidateJob(j *batchv1.Job) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&j.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	allErrs = append(allErrs, validateGeneratedSelector(j)...)
	allErrs = append(allErrs, validateJobSpec(&j.Spec, field.NewPath("spec"), true)...)
	// An Indexed Job's pods are named for it with their index as hostname:
	// the highest index must still make a DNS label.
	if j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == batchv1.IndexedCompletion && j.Spec.Completions != nil && *j.Spec.Completions > 0 {
		hostname := fmt.Sprintf("%s-%d", j.Name, *j.Spec.Completions-1)
		if len(utilvalidation.IsDNS1123Label(hostname)) > 0 {
			allErrs = append(allErrs, field.Invalid(field.NewPath("metadata", "name"), j.Name, "will not able to create pod with invalid DNS label: "+hostname))
		}
	}
	return allErrs
}

// ValidateJobUpdate checks an update of a Job: the spec as on create, and
// what may not change once created (selector, completionMode,
// podFailurePolicy, backoffLimitPerIndex, successPolicy, managedBy, and
// the template unless the Job is suspended).
func ValidateJobUpdate(j, old *batchv1.Job) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&j.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	p := field.NewPath("spec")
	allErrs = append(allErrs, validateJobSpec(&j.Spec, p, true)...)
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(j.Spec.Selector, old.Spec.Selector, p.Child("selector"))...)
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(j.Spec.CompletionMode, old.Spec.CompletionMode, p.Child("completionMode"))...)
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(j.Spec.PodFailurePolicy, old.Spec.PodFailurePolicy, p.Child("podFailurePolicy"))...)
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(j.Spec.BackoffLimitPerIndex, old.Spec.BackoffLimitPerIndex, p.Child("backoffLimitPerIndex"))...)
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(j.Spec.SuccessPolicy, old.Spec.SuccessPolicy, p.Child("successPolicy"))...)
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(j.Spec.ManagedBy, old.Spec.ManagedBy, p.Child("managedBy"))...)
	suspended := old.Spec.Suspend != nil && *old.Spec.Suspend
	if !suspended {
		allErrs = append(allErrs, apivalidation.ValidateImmutableField(j.Spec.Template, old.Spec.Template, p.Child("template"))...)
	}
	if j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == batchv1.IndexedCompletion {
		if j.Spec.Completions != nil && old.Spec.Completions != nil && *j.Spec.Completions != *old.Spec.Completions &&
			(j.Spec.Parallelism == nil || *j.Spec.Completions != *j.Spec.Parallelism) {
			allErrs = append(allErrs, field.Invalid(p.Child("completions"), j.Spec.Completions, "can only be modified in tandem with spec.parallelism"))
		}
	} else {
		allErrs = append(allErrs, apivalidation.ValidateImmutableField(j.Spec.Completions, old.Spec.Completions, p.Child("completions"))...)
	}
	return allErrs
}

// validateGeneratedSelector: a Job whose selector the server generated
// must carry its uid and name in its template's labels.
func validateGeneratedSelector(j *batchv1.Job) field.ErrorList {
	if j.Spec.ManualSelector != nil && *j.Spec.ManualSelector {
		return nil
	}
	p := field.NewPath("spec", "template", "metadata")
	var allErrs field.ErrorList
	for _, l := range []struct{ key, value string }{
		{LegacyControllerUIDLabel, string(j.UID)},
		{LegacyJobNameLabel, j.Name},
		{batchv1.ControllerUidLabel, string(j.UID)},
		{batchv1.JobNameLabel, j.Name},
	} {
		allErrs = append(allErrs, hasLabel(j.Spec.Template.Labels, p, l.key, l.value)...)
	}
	if len(allErrs) > 0 {
		return allErrs
	}
	want, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: string(j.UID)}})
	if err != nil || j.Spec.Selector == nil {
		return allErrs
	}
	got, err := metav1.LabelSelectorAsSelector(j.Spec.Selector)
	if err == nil && got.String() != want.String() {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec", "selector"), j.Spec.Selector, "`selector` not auto-generated"))
	}
	return allErrs
}

// hasLabel is upstream's ValidateHasLabel.
func hasLabel(l map[string]string, fldPath *field.Path, key, want string) field.ErrorList {
	got, ok := l[key]
	if !ok {
		return field.ErrorList{field.Required(fldPath.Child("labels").Key(key), fmt.Sprintf("must be '%s'", want))}
	}
	if got != want {
		return field.ErrorList{field.Invalid(fldPath.Child("labels").Key(key), got, fmt.Sprintf("must be '%s'", want))}
	}
	return nil
}

// validateJobSpec checks a Job's spec; needSelector is false for a
// CronJob's job template, whose selector is generated later.
func validateJobSpec(spec *batchv1.JobSpec, fldPath *field.Path, needSelector bool) field.ErrorList {
	var allErrs field.ErrorList
	nonNeg := func(v *int32, name string) {
		if v != nil {
			allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*v), fldPath.Child(name))...)
		}
	}
	nonNeg(spec.Parallelism, "parallelism")
	nonNeg(spec.Completions, "completions")
	nonNeg(spec.BackoffLimit, "backoffLimit")
	nonNeg(spec.BackoffLimitPerIndex, "backoffLimitPerIndex")
	nonNeg(spec.MaxFailedIndexes, "maxFailedIndexes")
	nonNeg(spec.TTLSecondsAfterFinished, "ttlSecondsAfterFinished")
	if spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(*spec.ActiveDeadlineSeconds, fldPath.Child("activeDeadlineSeconds"))...)
	}
	if spec.ManagedBy != nil {
		allErrs = append(allErrs, utilvalidation.IsDomainPrefixedPath(fldPath.Child("managedBy"), *spec.ManagedBy)...)
		if len(*spec.ManagedBy) > maxManagedByLength {
			allErrs = append(allErrs, field.TooLong(fldPath.Child("managedBy"), *spec.ManagedBy, maxManagedByLength))
		}
	}
	if spec.MaxFailedIndexes != nil && spec.BackoffLimitPerIndex == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
	}
	if spec.CompletionMode != nil && *spec.CompletionMode != batchv1.NonIndexedCompletion && *spec.CompletionMode != batchv1.IndexedCompletion {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("completionMode"), *spec.CompletionMode, []batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}))
	}
	if spec.CompletionMode != nil && *spec.CompletionMode == batchv1.IndexedCompletion {
		allErrs = append(allErrs, validateIndexedLimits(spec, fldPath)...)
	}
	if spec.CompletionMode == nil || *spec.CompletionMode == batchv1.NonIndexedCompletion {
		if spec.BackoffLimitPerIndex != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("backoffLimitPerIndex"), *spec.BackoffLimitPerIndex, "requires indexed completion mode"))
		}
		if spec.MaxFailedIndexes != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, "requires indexed completion mode"))
		}
	}
	if spec.PodReplacementPolicy != nil {
		switch *spec.PodReplacementPolicy {
		case batchv1.TerminatingOrFailed:
			if spec.PodFailurePolicy != nil {
				allErrs = append(allErrs, field.NotSupported(fldPath.Child("podReplacementPolicy"), *spec.PodReplacementPolicy, []batchv1.PodReplacementPolicy{batchv1.Failed}))
			}
		case batchv1.Failed:
		default:
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("podReplacementPolicy"), *spec.PodReplacementPolicy, []batchv1.PodReplacementPolicy{batchv1.Failed, batchv1.TerminatingOrFailed}))
		}
	}
	if spec.PodFailurePolicy != nil {
		allErrs = append(allErrs, validatePodFailurePolicy(spec, fldPath.Child("podFailurePolicy"))...)
	}
	if spec.SuccessPolicy != nil {
		if spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("successPolicy"), *spec.SuccessPolicy, "requires indexed completion mode"))
		} else {
			allErrs = append(allErrs, validateSuccessPolicy(spec, fldPath.Child("successPolicy"))...)
		}
	}
	tPath := fldPath.Child("template")
	if needSelector {
		if spec.Selector == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("selector"), ""))
		} else {
			allErrs = append(allErrs, metavalidation.ValidateLabelSelector(spec.Selector, metavalidation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))...)
		}
		if sel, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && spec.Selector != nil && !sel.Matches(labels.Set(spec.Template.Labels)) {
			allErrs = append(allErrs, field.Invalid(tPath.Child("metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
		}
	}
	allErrs = append(allErrs, corevalidation.ValidatePodTemplateSpec(&spec.Template, tPath)...)
	// Always is what pod defaulting makes of an unset policy: upstream
	// reports it as missing.
	rp, rpPath := spec.Template.Spec.RestartPolicy, tPath.Child("spec", "restartPolicy")
	switch {
	case rp == corev1.RestartPolicyAlways || rp == "":
		allErrs = append(allErrs, field.Required(rpPath, fmt.Sprintf("valid values: %q, %q", corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)))
	case rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever:
		allErrs = append(allErrs, field.NotSupported(rpPath, rp, []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	case spec.PodFailurePolicy != nil && rp != corev1.RestartPolicyNever:
		allErrs = append(allErrs, field.Invalid(rpPath, rp, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", corev1.RestartPolicyNever)))
	}
	return allErrs
}

func validatePodFailurePolicy(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	rulesPath := fldPath.Child("rules")
	if n := len(spec.PodFailurePolicy.Rules); n > maxPodFailurePolicyRules {
		allErrs = append(allErrs, field.TooMany(rulesPath, n, maxPodFailurePolicyRules))
	}
	containers := map[string]bool{}
	for _, c := range spec.Template.Spec.Containers {
		containers[c.Name] = true
	}
	for _, c := range spec.Template.Spec.InitContainers {
		containers[c.Name] = true
	}
	// Upstream lists the supported values sorted.
	actions := []batchv1.PodFailurePolicyAction{batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyActionFailIndex, batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionIgnore}
	for i, rule := range spec.PodFailurePolicy.Rules {
		p := rulesPath.Index(i)
		ap := p.Child("action")
		switch {
		case rule.Action == "":
			allErrs = append(allErrs, field.Required(ap, fmt.Sprintf("valid values: %q", actions)))
		case rule.Action == batchv1.PodFailurePolicyActionFailIndex:
			if spec.BackoffLimitPerIndex == nil {
				allErrs = append(allErrs, field.Invalid(ap, rule.Action, "requires the backoffLimitPerIndex to be set"))
			}
		case !slices.Contains(actions, rule.Action):
			allErrs = append(allErrs, field.NotSupported(ap, rule.Action, actions))
		}
		if rule.OnExitCodes != nil {
			allErrs = append(allErrs, validateOnExitCodes(rule.OnExitCodes, p.Child("onExitCodes"), containers)...)
		}
		if len(rule.OnPodConditions) > 0 {
			allErrs = append(allErrs, validateOnPodConditions(rule.OnPodConditions, p.Child("onPodConditions"))...)
		}
		if rule.OnExitCodes != nil && len(rule.OnPodConditions) > 0 {
			allErrs = append(allErrs, field.Invalid(p, field.OmitValueType{}, "specifying both OnExitCodes and OnPodConditions is not supported"))
		}
		if rule.OnExitCodes == nil && len(rule.OnPodConditions) == 0 {
			allErrs = append(allErrs, field.Invalid(p, field.OmitValueType{}, "specifying one of OnExitCodes and OnPodConditions is required"))
		}
	}
	return allErrs
}

func validateOnExitCodes(r *batchv1.PodFailurePolicyOnExitCodesRequirement, p *field.Path, containers map[string]bool) field.ErrorList {
	var allErrs field.ErrorList
	operators := []batchv1.PodFailurePolicyOnExitCodesOperator{batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyOnExitCodesOpNotIn}
	switch {
	case r.Operator == "":
		allErrs = append(allErrs, field.Required(p.Child("operator"), fmt.Sprintf("valid values: %q", operators)))
	case !slices.Contains(operators, r.Operator):
		allErrs = append(allErrs, field.NotSupported(p.Child("operator"), r.Operator, operators))
	}
	if r.ContainerName != nil && !containers[*r.ContainerName] {
		allErrs = append(allErrs, field.Invalid(p.Child("containerName"), *r.ContainerName, "must be one of the container or initContainer names in the pod template"))
	}
	vp := p.Child("values")
	switch {
	case len(r.Values) == 0:
		allErrs = append(allErrs, field.Invalid(vp, r.Values, "at least one value is required"))
	case len(r.Values) > maxPodFailurePolicyOnExitCodesValues:
		allErrs = append(allErrs, field.TooMany(vp, len(r.Values), maxPodFailurePolicyOnExitCodesValues))
	}
	ordered, seen := true, map[int32]bool{}
	for j, v := range r.Values {
		if r.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && v == 0 {
			allErrs = append(allErrs, field.Invalid(vp.Index(j), v, "must not be 0 for the In operator"))
		}
		if seen[v] {
			allErrs = append(allErrs, field.Duplicate(vp.Index(j), v))
		}
		seen[v] = true
		if j > 0 && r.Values[j-1] > v {
			ordered = false
		}
	}
	if !ordered {
		allErrs = append(allErrs, field.Invalid(vp, r.Values, "must be ordered"))
	}
	return allErrs
}

func validateOnPodConditions(patterns []batchv1.PodFailurePolicyOnPodConditionsPattern, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(patterns) > maxPodFailurePolicyOnPodConditionsPatterns {
		allErrs = append(allErrs, field.TooMany(p, len(patterns), maxPodFailurePolicyOnPodConditionsPatterns))
	}
	statuses := []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionUnknown}
	for j, pattern := range patterns {
		pp := p.Index(j)
		for _, msg := range utilvalidation.IsQualifiedName(string(pattern.Type)) {
			allErrs = append(allErrs, field.Invalid(pp.Child("type"), pattern.Type, msg))
		}
		switch {
		case pattern.Status == "":
			allErrs = append(allErrs, field.Required(pp.Child("status"), fmt.Sprintf("valid values: %q", statuses)))
		case !slices.Contains(statuses, pattern.Status):
			allErrs = append(allErrs, field.NotSupported(pp.Child("status"), pattern.Status, statuses))
		}
	}
	return allErrs
}

func validateSuccessPolicy(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	rulesPath := fldPath.Child("rules")
	rules := spec.SuccessPolicy.Rules
	if len(rules) == 0 {
		allErrs = append(allErrs, field.Required(rulesPath, "at least one rules must be specified when the successPolicy is specified"))
	}
	if len(rules) > maxSuccessPolicyRules {
		allErrs = append(allErrs, field.TooMany(rulesPath, len(rules), maxSuccessPolicyRules))
	}
	// Indexed needs completions, which validateJobSpec reports missing.
	var completions int32
	if spec.Completions != nil {
		completions = *spec.Completions
	}
	for i, rule := range rules {
		p := rulesPath.Index(i)
		if rule.SucceededCount == nil && rule.SucceededIndexes == nil {
			allErrs = append(allErrs, field.Required(p, "at least one of succeededCount or succeededIndexes must be specified"))
		}
		var total int32
		if rule.SucceededIndexes != nil {
			ip := p.Child("succeededIndexes")
			if len(*rule.SucceededIndexes) > maxSucceededIndexesLength {
				allErrs = append(allErrs, field.TooLong(ip, *rule.SucceededIndexes, maxSucceededIndexesLength))
			}
			var err error
			if total, err = CountIndexes(*rule.SucceededIndexes, completions); err != nil {
				allErrs = append(allErrs, field.Invalid(ip, *rule.SucceededIndexes, fmt.Sprintf("error parsing succeededIndexes: %s", err.Error())))
			}
		}
		if rule.SucceededCount != nil {
			cp := p.Child("succeededCount")
			allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*rule.SucceededCount), cp)...)
			if *rule.SucceededCount > completions {
				allErrs = append(allErrs, field.Invalid(cp, *rule.SucceededCount, fmt.Sprintf("must be less than or equal to %d (the number of specified completions)", completions)))
			}
			if rule.SucceededIndexes != nil && *rule.SucceededCount > total {
				allErrs = append(allErrs, field.Invalid(cp, *rule.SucceededCount, fmt.Sprintf("must be less than or equal to %d (the number of indexes in the specified succeededIndexes field)", total)))
			}
		}
	}
	return allErrs
}

// CountIndexes checks an index list ("1,3-5,7": intervals in increasing
// order, each below completions) as upstream's validateIndexesFormat, with
// its messages, and returns how many indexes it holds.
func CountIndexes(s string, completions int32) (int32, error) {
	if s == "" {
		return 0, nil
	}
	var total int32
	last := int32(-1)
	for _, part := range strings.Split(s, ",") {
		x, y, err := parseIndexInterval(part, completions)
		if err != nil {
			return 0, err
		}
		if last >= x {
			return 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", last, x)
		}
		total += y - x + 1
		last = y
	}
	return total, nil
}

func parseIndexInterval(s string, completions int32) (int32, int32, error) {
	limits := strings.Split(s, "-")
	if len(limits) > 2 {
		return 0, 0, fmt.Errorf("the fragment %q violates the requirement that an index interval can have at most two parts separated by '-'", s)
	}
	bound := func(v string) (int32, error) {
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("cannot convert string to integer for index: %q", v)
		}
		if n >= int(completions) {
			return 0, fmt.Errorf("too large index: %q", v)
		}
		return int32(n), nil
	}
	x, err := bound(limits[0])
	if err != nil {
		return 0, 0, err
	}
	if len(limits) == 1 {
		return x, x, nil
	}
	y, err := bound(limits[1])
	if err != nil {
		return 0, 0, err
	}
	if x >= y {
		return 0, 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", x, y)
	}
	return x, y, nil
}

// validateIndexedLimits checks an Indexed Job's completions, parallelism
// and maxFailedIndexes, as upstream.
func validateIndexedLimits(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.Completions == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("completions"), fmt.Sprintf("when completion mode is %s", batchv1.IndexedCompletion)))
	}
	if spec.Parallelism != nil && *spec.Parallelism > maxParallelismForIndexedJob {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("parallelism"), *spec.Parallelism, fmt.Sprintf("must be less than or equal to %d when completion mode is %s", maxParallelismForIndexedJob, batchv1.IndexedCompletion)))
	}
	if spec.Completions != nil && spec.MaxFailedIndexes != nil && *spec.MaxFailedIndexes > *spec.Completions {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, "must be less than or equal to completions"))
	}
	if spec.MaxFailedIndexes != nil && *spec.MaxFailedIndexes > maxFailedIndexesForIndexedJob {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, fmt.Sprintf("must be less than or equal to %d", maxFailedIndexesForIndexedJob)))
	}
	if spec.Completions != nil && *spec.Completions > completionsSoftLimit && spec.BackoffLimitPerIndex != nil {
		if spec.MaxFailedIndexes == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("maxFailedIndexes"), fmt.Sprintf("must be specified when completions is above %d", completionsSoftLimit)))
		}
		if spec.Parallelism != nil && *spec.Parallelism > parallelismLimitForHighCompletions {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("parallelism"), *spec.Parallelism, fmt.Sprintf("must be less than or equal to %d when completions are above %d and used with backoff limit per index", parallelismLimitForHighCompletions, completionsSoftLimit)))
		}
		if spec.MaxFailedIndexes != nil && *spec.MaxFailedIndexes > maxFailedIndexesLimitForHighCompletions {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, fmt.Sprintf("must be less than or equal to %d when completions are above %d and used with backoff limit per index", maxFailedIndexesLimitForHighCompletions, completionsSoftLimit)))
		}
	}
	return allErrs
}
