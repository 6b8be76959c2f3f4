package validation

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/apis/batch/defaults"
)

func validJob() *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: "u1"},
		Spec: batchv1.JobSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: "u1"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{batchv1.ControllerUidLabel: "u1", batchv1.JobNameLabel: "pi",
					LegacyControllerUIDLabel: "u1", LegacyJobNameLabel: "pi"}},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox",
					ImagePullPolicy: corev1.PullAlways, TerminationMessagePolicy: corev1.TerminationMessageReadFile, TerminationMessagePath: "/dev/termination-log"}}},
			},
		},
	}
	defaults.Job(j)
	return j
}

func TestValidateJob(t *testing.T) {
	indexed := batchv1.IndexedCompletion
	tests := []struct {
		name   string
		mutate func(*batchv1.Job)
		want   []string
	}{
		{"generated selector and labels are valid", func(*batchv1.Job) {}, nil},
		{"a generated label that lies", func(j *batchv1.Job) { j.Spec.Template.Labels[batchv1.JobNameLabel] = "other" },
			[]string{`spec.template.metadata.labels[batch.kubernetes.io/job-name]: Invalid value: "other": must be 'pi'`}},
		{"restart policy", func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways },
			[]string{`spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`}},
		{"unknown restart policy", func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = "Sometimes" },
			[]string{`spec.template.spec.restartPolicy: Unsupported value: "Sometimes": supported values: "OnFailure", "Never"`}},
		{"indexed needs completions", func(j *batchv1.Job) { j.Spec.CompletionMode, j.Spec.Completions = &indexed, nil },
			[]string{"spec.completions: Required value: when completion mode is Indexed"}},
		{"negative backoffLimit", func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To[int32](-1) },
			[]string{"spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0"}},
		{"pod failure policy needs Never", func(j *batchv1.Job) {
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionFailJob,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1}}}}}
		}, []string{`spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified`}},
		{"exit code values ordered, not 0 for In", func(j *batchv1.Job) {
			j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionFailJob,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{0, 3, 2}}}}}
		}, []string{"spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator",
			"spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: [0,3,2]: must be ordered"}},
		{"pod failure policy rules as upstream", func(j *batchv1.Job) {
			j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				{OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: ptr.To("sidecar"), Values: []int32{1, 1}}},
				{Action: "Retry", OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: "bad type!"}, {Type: corev1.DisruptionTarget, Status: "Maybe"}}},
			}}
		}, []string{
			`spec.podFailurePolicy.rules[0].action: Required value: valid values: ["Count" "FailIndex" "FailJob" "Ignore"]`,
			`spec.podFailurePolicy.rules[0].onExitCodes.operator: Required value: valid values: ["In" "NotIn"]`,
			`spec.podFailurePolicy.rules[0].onExitCodes.containerName: Invalid value: "sidecar": must be one of the container or initContainer names in the pod template`,
			`spec.podFailurePolicy.rules[0].onExitCodes.values[1]: Duplicate value: 1`,
			`spec.podFailurePolicy.rules[1].action: Unsupported value: "Retry": supported values: "Count", "FailIndex", "FailJob", "Ignore"`,
			`spec.podFailurePolicy.rules[1].onPodConditions[0].type: Invalid value: "bad type!"`,
			`spec.podFailurePolicy.rules[1].onPodConditions[0].status: Required value: valid values: ["False" "True" "Unknown"]`,
			`spec.podFailurePolicy.rules[1].onPodConditions[1].status: Unsupported value: "Maybe": supported values: "False", "True", "Unknown"`,
		}},
		{"indexed pod hostnames", func(j *batchv1.Job) {
			j.Name = strings.Repeat("a", 62)
			j.Spec.Template.Labels[batchv1.JobNameLabel], j.Spec.Template.Labels[LegacyJobNameLabel] = j.Name, j.Name
			j.Spec.CompletionMode, j.Spec.Completions = &indexed, ptr.To[int32](10)
		}, []string{"metadata.name: Invalid value: \"" + strings.Repeat("a", 62) + "\": will not able to create pod with invalid DNS label: " + strings.Repeat("a", 62) + "-9"}},
		{"successPolicy needs Indexed", func(j *batchv1.Job) {
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededCount: ptr.To[int32](1)}}}
		}, []string{"spec.successPolicy: Invalid value: ", "requires indexed completion mode"}},
		{"successPolicy without rules", func(j *batchv1.Job) {
			j.Spec.CompletionMode, j.Spec.Completions = &indexed, ptr.To[int32](5)
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{}
		}, []string{"spec.successPolicy.rules: Required value: at least one rules must be specified when the successPolicy is specified"}},
		{"successPolicy rule needs a criterion", func(j *batchv1.Job) {
			j.Spec.CompletionMode, j.Spec.Completions = &indexed, ptr.To[int32](5)
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{}}}
		}, []string{"spec.successPolicy.rules[0]: Required value: at least one of succeededCount or succeededIndexes must be specified"}},
		{"successPolicy succeededIndexes format", func(j *batchv1.Job) {
			j.Spec.CompletionMode, j.Spec.Completions = &indexed, ptr.To[int32](5)
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{
				{SucceededIndexes: ptr.To("0-2,1")}, {SucceededIndexes: ptr.To("3,7")}, {SucceededIndexes: ptr.To("a")}, {SucceededIndexes: ptr.To("1-2-3")}, {SucceededIndexes: ptr.To("3-1")}}}
		}, []string{
			`spec.successPolicy.rules[0].succeededIndexes: Invalid value: "0-2,1": error parsing succeededIndexes: non-increasing order, previous: 2, current: 1`,
			`spec.successPolicy.rules[1].succeededIndexes: Invalid value: "3,7": error parsing succeededIndexes: too large index: "7"`,
			`spec.successPolicy.rules[2].succeededIndexes: Invalid value: "a": error parsing succeededIndexes: cannot convert string to integer for index: "a"`,
			`spec.successPolicy.rules[3].succeededIndexes: Invalid value: "1-2-3": error parsing succeededIndexes: the fragment "1-2-3" violates the requirement that an index interval can have at most two parts separated by '-'`,
			`spec.successPolicy.rules[4].succeededIndexes: Invalid value: "3-1": error parsing succeededIndexes: non-increasing order, previous: 3, current: 1`,
		}},
		{"successPolicy succeededCount bounds", func(j *batchv1.Job) {
			j.Spec.CompletionMode, j.Spec.Completions = &indexed, ptr.To[int32](5)
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{
				{SucceededCount: ptr.To[int32](6)}, {SucceededIndexes: ptr.To("0,2-3"), SucceededCount: ptr.To[int32](4)}, {SucceededCount: ptr.To[int32](-1)}}}
		}, []string{
			"spec.successPolicy.rules[0].succeededCount: Invalid value: 6: must be less than or equal to 5 (the number of specified completions)",
			"spec.successPolicy.rules[1].succeededCount: Invalid value: 4: must be less than or equal to 3 (the number of indexes in the specified succeededIndexes field)",
			"spec.successPolicy.rules[2].succeededCount: Invalid value: -1: must be greater than or equal to 0",
		}},
		{"successPolicy valid", func(j *batchv1.Job) {
			j.Spec.CompletionMode, j.Spec.Completions = &indexed, ptr.To[int32](5)
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0,2-4"), SucceededCount: ptr.To[int32](2)}}}
		}, nil},
		{"maxFailedIndexes needs backoffLimitPerIndex and Indexed", func(j *batchv1.Job) { j.Spec.MaxFailedIndexes = ptr.To[int32](1) },
			[]string{"spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified", "spec.maxFailedIndexes: Invalid value: 1: requires indexed completion mode"}},
		{"backoffLimitPerIndex needs Indexed", func(j *batchv1.Job) { j.Spec.CompletionMode, j.Spec.BackoffLimitPerIndex = nil, ptr.To[int32](1) },
			[]string{"spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode"}},
		{"maxFailedIndexes within completions", func(j *batchv1.Job) {
			j.Spec.CompletionMode, j.Spec.Completions = &indexed, ptr.To[int32](5)
			j.Spec.BackoffLimitPerIndex, j.Spec.MaxFailedIndexes = ptr.To[int32](1), ptr.To[int32](6)
		}, []string{"spec.maxFailedIndexes: Invalid value: 6: must be less than or equal to completions"}},
		{"many completions with backoffLimitPerIndex", func(j *batchv1.Job) {
			j.Spec.CompletionMode, j.Spec.Completions, j.Spec.Parallelism = &indexed, ptr.To[int32](100001), ptr.To[int32](10001)
			j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
		}, []string{"spec.maxFailedIndexes: Required value: must be specified when completions is above 100000",
			"spec.parallelism: Invalid value: 10001: must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index"}},
		{"many completions without backoffLimitPerIndex", func(j *batchv1.Job) {
			j.Spec.CompletionMode, j.Spec.Completions, j.Spec.Parallelism = &indexed, ptr.To[int32](200000), ptr.To[int32](10)
		}, nil},
		{"FailIndex needs backoffLimitPerIndex", func(j *batchv1.Job) {
			j.Spec.CompletionMode, j.Spec.Completions = &indexed, ptr.To[int32](5)
			j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionFailIndex,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1}}}}}
		}, []string{`spec.podFailurePolicy.rules[0].action: Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set`}},
		{"backoffLimitPerIndex valid", func(j *batchv1.Job) {
			j.Spec.CompletionMode, j.Spec.Completions = &indexed, ptr.To[int32](5)
			j.Spec.BackoffLimitPerIndex, j.Spec.MaxFailedIndexes = ptr.To[int32](2), ptr.To[int32](5)
		}, nil},
		{"managedBy a domain-prefixed path", func(j *batchv1.Job) { j.Spec.ManagedBy = ptr.To("kueue") },
			[]string{`spec.managedBy: Invalid value: "kueue": must be a domain-prefixed path (such as "acme.io/foo")`}},
		{"managedBy too long", func(j *batchv1.Job) { j.Spec.ManagedBy = ptr.To("example.com/" + strings.Repeat("a", 60)) },
			[]string{"spec.managedBy: Too long: may not be more than 63 bytes"}},
		{"managedBy empty", func(j *batchv1.Job) { j.Spec.ManagedBy = ptr.To("") }, []string{"spec.managedBy: Required value"}},
		{"managedBy valid", func(j *batchv1.Job) { j.Spec.ManagedBy = ptr.To("kueue.x-k8s.io/multikueue") }, nil},
		{"too many successPolicy rules", func(j *batchv1.Job) {
			j.Spec.CompletionMode, j.Spec.Completions = &indexed, ptr.To[int32](5)
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{}
			for range 21 {
				j.Spec.SuccessPolicy.Rules = append(j.Spec.SuccessPolicy.Rules, batchv1.SuccessPolicyRule{SucceededCount: ptr.To[int32](1)})
			}
		}, []string{"spec.successPolicy.rules: Too many: 21: must have at most 20 items"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := validJob()
			tc.mutate(j)
			errs := ValidateJob(j).ToAggregate()
			if len(tc.want) == 0 && errs != nil {
				t.Fatalf("unexpected errors: %v", errs)
			}
			for _, w := range tc.want {
				if errs == nil || !strings.Contains(errs.Error(), w) {
					t.Errorf("errors %v\ndo not contain %q", errs, w)
				}
			}
		})
	}
}

func TestValidateJobUpdateImmutable(t *testing.T) {
	old := validJob()
	old.ResourceVersion = "1"
	up := old.DeepCopy()
	up.Spec.Template.Spec.Containers[0].Image = "busybox:2"
	if errs := ValidateJobUpdate(up, old).ToAggregate(); errs == nil || !strings.Contains(errs.Error(), "spec.template: Invalid value") || !strings.Contains(errs.Error(), "field is immutable") {
		t.Errorf("template change of a running job: %v", errs)
	}
	old.Spec.Suspend = ptr.To(true)
	up.Spec.Suspend = ptr.To(true)
	if errs := ValidateJobUpdate(up, old); len(errs) != 0 {
		t.Errorf("template change of a suspended job: %v", errs)
	}
}

func TestValidateCronJob(t *testing.T) {
	valid := func() *batchv1.CronJob {
		j := validJob()
		c := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "tick", Namespace: "default"},
			Spec: batchv1.CronJobSpec{Schedule: "*/5 * * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: j.Spec}}}
		c.Spec.JobTemplate.Spec.Selector = nil
		defaults.CronJob(c)
		return c
	}
	tests := []struct {
		name   string
		mutate func(*batchv1.CronJob)
		want   string
	}{
		{"valid", func(*batchv1.CronJob) {}, ""},
		{"macro", func(c *batchv1.CronJob) { c.Spec.Schedule = "@hourly" }, ""},
		{"TZ in the schedule", func(c *batchv1.CronJob) { c.Spec.Schedule = "TZ=UTC * * * * *" }, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"},
		{"unknown zone", func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("Mars/Olympus") }, "spec.timeZone: Invalid value"},
		{"Local zone", func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("Local") }, "timeZone must be an explicit time zone"},
		{"selector in the template", func(c *batchv1.CronJob) { c.Spec.JobTemplate.Spec.Selector = &metav1.LabelSelector{} }, "`selector` will be auto-generated"},
		{"concurrency policy", func(c *batchv1.CronJob) { c.Spec.ConcurrencyPolicy = "Sometimes" }, `spec.concurrencyPolicy: Unsupported value: "Sometimes"`},
		{"name too long", func(c *batchv1.CronJob) { c.Name = strings.Repeat("a", 53) }, "must be no more than 52 characters"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.mutate(c)
			wantError(t, ValidateCronJob(c), tc.want)
		})
	}
}

func TestValidateJobUpdateSuccessPolicy(t *testing.T) {
	indexed := batchv1.IndexedCompletion
	old := validJob()
	old.ResourceVersion = "1"
	old.Spec.CompletionMode, old.Spec.Completions, old.Spec.Parallelism = &indexed, ptr.To[int32](5), ptr.To[int32](5)
	up := old.DeepCopy()
	up.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededCount: ptr.To[int32](1)}}}
	if errs := ValidateJobUpdate(up, old).ToAggregate(); errs == nil || !strings.Contains(errs.Error(), "spec.successPolicy: Invalid value") || !strings.Contains(errs.Error(), "field is immutable") {
		t.Errorf("successPolicy added to a Job: %v", errs)
	}
	managed := old.DeepCopy()
	managed.Spec.ManagedBy = ptr.To(batchv1.JobControllerName)
	if errs := ValidateJobUpdate(managed, old).ToAggregate(); errs == nil || !strings.Contains(errs.Error(), "spec.managedBy: Invalid value") || !strings.Contains(errs.Error(), "field is immutable") {
		t.Errorf("managedBy set on a Job: %v", errs)
	}

	cond := func(ts ...batchv1.JobConditionType) []batchv1.JobCondition {
		var out []batchv1.JobCondition
		for _, t := range ts {
			out = append(out, batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue})
		}
		return out
	}
	old.Spec.SuccessPolicy = up.Spec.SuccessPolicy
	tests := []struct {
		name     string
		old, now []batchv1.JobCondition
		want     string
	}{
		{"SuccessCriteriaMet then Complete", cond(batchv1.JobSuccessCriteriaMet), cond(batchv1.JobSuccessCriteriaMet, batchv1.JobComplete), ""},
		{"Complete without SuccessCriteriaMet", nil, cond(batchv1.JobComplete), "status.conditions: Invalid value: cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True"},
		{"SuccessCriteriaMet and FailureTarget", nil, cond(batchv1.JobSuccessCriteriaMet, batchv1.JobFailureTarget), "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions"},
		{"SuccessCriteriaMet withdrawn", cond(batchv1.JobSuccessCriteriaMet), nil, "cannot disable the SuccessCriteriaMet=True condition"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, n := old.DeepCopy(), old.DeepCopy()
			o.Status.Conditions, n.Status.Conditions = tc.old, tc.now
			start := metav1.Now()
			o.Status.StartTime, n.Status.StartTime = &start, &start
			if conditionTrue(&n.Status, batchv1.JobComplete) {
				n.Status.CompletionTime = &start
			}
			wantError(t, ValidateJobStatusUpdate(n, o), tc.want)
		})
	}
}

func TestValidateJobStatusIndexes(t *testing.T) {
	indexed := batchv1.IndexedCompletion
	base := validJob()
	base.ResourceVersion = "1"
	base.Spec.CompletionMode, base.Spec.Completions, base.Spec.BackoffLimitPerIndex = &indexed, ptr.To[int32](6), ptr.To[int32](1)
	tests := []struct {
		name      string
		mutate    func(*batchv1.Job)
		completed string
		failed    *string
		want      string
	}{
		{"valid", nil, "0,1", ptr.To("3-5"), ""},
		{"completedIndexes past completions", nil, "0,7", nil, `status.completedIndexes: Invalid value: "0,7": error parsing completedIndexes: too large index: "7"`},
		{"failedIndexes malformed", nil, "", ptr.To("2,1"), "error parsing failedIndexes: non-increasing order, previous: 2, current: 1"},
		{"overlap", nil, "0-3", ptr.To("3-5"), `status.failedIndexes: Invalid value: "3-5": failedIndexes and completedIndexes overlap at index: 3`},
		{"failedIndexes without backoffLimitPerIndex", func(j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = nil }, "", ptr.To(""),
			`status.failedIndexes: Invalid value: "": cannot set non-null failedIndexes when backoffLimitPerIndex is null`},
		{"completedIndexes of a NonIndexed Job", func(j *batchv1.Job) {
			j.Spec.CompletionMode, j.Spec.BackoffLimitPerIndex = ptr.To(batchv1.NonIndexedCompletion), nil
		}, "1", nil,
			`status.completedIndexes: Invalid value: "1": cannot set non-empty completedIndexes when non-indexed completion mode`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := base.DeepCopy()
			if tc.mutate != nil {
				tc.mutate(old)
			}
			up := old.DeepCopy()
			up.Status.CompletedIndexes, up.Status.FailedIndexes = tc.completed, tc.failed
			wantError(t, ValidateJobStatusUpdate(up, old), tc.want)
			// Ratcheting: an old status already broken keeps being writable.
			if tc.want != "" {
				if errs := ValidateJobStatusUpdate(up, up.DeepCopy()); len(errs) != 0 {
					t.Errorf("a status already broken is refused again: %v", errs)
				}
			}
		})
	}
}

func TestValidateJobStatusTransitions(t *testing.T) {
	t0 := metav1.NewTime(time.Unix(1000, 0))
	t1 := metav1.NewTime(time.Unix(2000, 0))
	cond := func(ts ...batchv1.JobConditionType) []batchv1.JobCondition {
		var out []batchv1.JobCondition
		for _, t := range ts {
			out = append(out, batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue})
		}
		return out
	}
	running := batchv1.JobStatus{StartTime: &t0, Active: 2, Ready: ptr.To[int32](1), Failed: 3, Succeeded: 2}
	tests := []struct {
		name   string
		old    batchv1.JobStatus
		mutate func(s *batchv1.JobStatus)
		want   string
	}{
		{"complete properly", running, func(s *batchv1.JobStatus) {
			s.Active, s.Ready, s.CompletionTime = 0, ptr.To[int32](0), &t1
			s.Conditions = cond(batchv1.JobSuccessCriteriaMet, batchv1.JobComplete)
		}, ""},
		{"fail properly", running, func(s *batchv1.JobStatus) {
			s.Active, s.Ready = 0, ptr.To[int32](0)
			s.Conditions = cond(batchv1.JobFailureTarget, batchv1.JobFailed)
		}, ""},
		{"Failed without FailureTarget", running, func(s *batchv1.JobStatus) {
			s.Active, s.Ready, s.Conditions = 0, ptr.To[int32](0), cond(batchv1.JobFailed)
		}, "status.conditions: Invalid value: cannot set Failed=True condition without the FailureTarget=true condition"},
		{"Complete without SuccessCriteriaMet", running, func(s *batchv1.JobStatus) {
			s.Active, s.Ready, s.CompletionTime, s.Conditions = 0, ptr.To[int32](0), &t1, cond(batchv1.JobComplete)
		}, "cannot set Complete=True condition without the SuccessCriteriaMet=true condition"},
		{"Complete without completionTime", running, func(s *batchv1.JobStatus) {
			s.Active, s.Ready, s.Conditions = 0, ptr.To[int32](0), cond(batchv1.JobSuccessCriteriaMet, batchv1.JobComplete)
		}, "status.completionTime: Required value: completionTime is required for Complete jobs"},
		{"finished with active pods", running, func(s *batchv1.JobStatus) {
			s.Ready, s.Conditions = ptr.To[int32](0), cond(batchv1.JobFailureTarget, batchv1.JobFailed)
		}, "status.active: Invalid value: 2: active>0 is invalid for finished job"},
		{"finished with uncounted pods", running, func(s *batchv1.JobStatus) {
			s.Active, s.Ready, s.Conditions = 0, ptr.To[int32](0), cond(batchv1.JobFailureTarget, batchv1.JobFailed)
			s.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{Failed: []types.UID{"a"}}
		}, "uncountedTerminatedPods needs to be empty for finished job"},
		{"finished with terminating pods", running, func(s *batchv1.JobStatus) {
			s.Active, s.Ready, s.Terminating, s.Conditions = 0, ptr.To[int32](0), ptr.To[int32](1), cond(batchv1.JobFailureTarget, batchv1.JobFailed)
		}, "status.terminating: Invalid value: 1: terminating>0 is invalid for finished job"},
		{"terminal condition withdrawn", batchv1.JobStatus{StartTime: &t0, Conditions: cond(batchv1.JobFailureTarget)}, func(s *batchv1.JobStatus) { s.Conditions = nil },
			"cannot disable the terminal FailureTarget=True condition"},
		{"failed counter down", running, func(s *batchv1.JobStatus) { s.Failed = 2 }, "status.failed: Invalid value: 2: cannot decrease the failed counter"},
		{"succeeded counter down", running, func(s *batchv1.JobStatus) { s.Succeeded = 1 }, "status.succeeded: Invalid value: 1: cannot decrease the succeeded counter"},
		{"more ready than active", running, func(s *batchv1.JobStatus) { s.Ready = ptr.To[int32](3) }, "status.ready: Invalid value: 3: cannot set more ready pods than active"},
		{"startTime removed while running", running, func(s *batchv1.JobStatus) { s.StartTime = nil }, "status.startTime: Required value: startTime cannot be removed for unsuspended job"},
		{"completionTime before startTime", running, func(s *batchv1.JobStatus) {
			s.Active, s.Ready, s.CompletionTime = 0, ptr.To[int32](0), ptr.To(metav1.NewTime(time.Unix(10, 0)))
			s.Conditions = cond(batchv1.JobSuccessCriteriaMet, batchv1.JobComplete)
		}, "completionTime cannot be set before startTime"},
		{"duplicate uncounted uid", running, func(s *batchv1.JobStatus) {
			s.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{Succeeded: []types.UID{"a"}, Failed: []types.UID{"a", ""}}
		}, `status.uncountedTerminatedPods.failed[0]: Duplicate value: "a"`},
		{"a status already off may still be written", batchv1.JobStatus{StartTime: &t0, Active: 1, Ready: ptr.To[int32](4)},
			func(s *batchv1.JobStatus) { s.Failed = 1 }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := validJob()
			old.ResourceVersion = "1"
			old.Status = tc.old
			up := old.DeepCopy()
			tc.mutate(&up.Status)
			wantError(t, ValidateJobStatusUpdate(up, old), tc.want)
		})
	}
}

// wantError fails t unless errs hold want ("" for none).
func wantError(t *testing.T, errs field.ErrorList, want string) {
	t.Helper()
	agg := errs.ToAggregate()
	switch {
	case want == "" && agg != nil:
		t.Fatalf("unexpected errors: %v", agg)
	case want != "" && (agg == nil || !strings.Contains(agg.Error(), want)):
		t.Errorf("errors %v\ndo not contain %q", agg, want)
	}
}
