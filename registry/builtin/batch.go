package builtin

import (
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	batchdefaults "github.com/kite-project/kite/apis/batch/defaults"
	batchvalidation "github.com/kite-project/kite/apis/batch/validation"
	"github.com/kite-project/kite/registry"
)

// Jobs returns the strategy of batch/v1 jobs. Unless manualSelector, the
// selector is generated on create from the Job's uid, and its pod
// template gets the uid and name labels. Deleting a Job orphans its pods
// unless told otherwise, as upstream keeps for batch/v1 (kubectl sends
// Background).
func Jobs() *registry.Strategy {
	return &registry.Strategy{
		Kind:               batchv1.SchemeGroupVersion.WithKind("Job"),
		Resource:           "jobs",
		SingularName:       "job",
		Categories:         []string{"all"},
		Namespaced:         true,
		DefaultPropagation: metav1.DeletePropagationOrphan,
		New:                func() runtime.Object { return &batchv1.Job{} },
		NewList:            func() runtime.Object { return &batchv1.JobList{} },
		Default:            func(obj runtime.Object) { batchdefaults.Job(obj.(*batchv1.Job)) },
		ValidatesMetadata:  true,
		PrepareForCreate: func(obj runtime.Object) {
			j := obj.(*batchv1.Job)
			j.Status = batchv1.JobStatus{}
			j.Generation = 1
			if j.Spec.ManualSelector == nil || !*j.Spec.ManualSelector {
				generateJobSelector(j)
				// Upstream defaults again when it reads the Job back from
				// storage: a Job without labels gets its template's,
				// generated ones included.
				batchdefaults.Job(j)
			}
		},
		PrepareForUpdate: func(obj, old runtime.Object) {
			j, o := obj.(*batchv1.Job), old.(*batchv1.Job)
			j.Status = o.Status
			if !apiequality.Semantic.DeepEqual(j.Spec, o.Spec) {
				j.Generation = o.Generation + 1
			}
		},
		Validate: func(obj runtime.Object) field.ErrorList { return batchvalidation.ValidateJob(obj.(*batchv1.Job)) },
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return batchvalidation.ValidateJobUpdate(obj.(*batchv1.Job), old.(*batchv1.Job))
		},
		// As upstream's JobToSelectableFields: kubectl's
		// --field-selector status.successful=N.
		SelectableFields: func(obj runtime.Object) fields.Set {
			return fields.Set{"status.successful": strconv.Itoa(int(obj.(*batchv1.Job).Status.Succeeded))}
		},
		FieldLabels:              []string{"status.successful"},
		AllowUnconditionalUpdate: true,
		Subresources: map[string]*registry.Subresource{
			"status": {
				PrepareForUpdate: func(obj, old runtime.Object) {
					j, o := obj.(*batchv1.Job), old.(*batchv1.Job)
					j.Spec = o.Spec
				},
				ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
					return batchvalidation.ValidateJobStatusUpdate(obj.(*batchv1.Job), old.(*batchv1.Job))
				},
			},
		},
	}
}

// generateJobSelector is upstream's generateSelector: the pod template is
// labelled with the Job's name and uid (unless it sets them, which
// validation then judges) and the selector matches the uid.
func generateJobSelector(j *batchv1.Job) {
	if j.Spec.Template.Labels == nil {
		j.Spec.Template.Labels = map[string]string{}
	}
	for k, v := range map[string]string{
		batchvalidation.LegacyJobNameLabel:       j.Name,
		batchv1.JobNameLabel:                     j.Name,
		batchvalidation.LegacyControllerUIDLabel: string(j.UID),
		batchv1.ControllerUidLabel:               string(j.UID),
	} {
		if _, set := j.Spec.Template.Labels[k]; !set {
			j.Spec.Template.Labels[k] = v
		}
	}
	if j.Spec.Selector == nil {
		j.Spec.Selector = &metav1.LabelSelector{}
	}
	if j.Spec.Selector.MatchLabels == nil {
		j.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, set := j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; !set {
		j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] = string(j.UID)
	}
}

// CronJobs returns the strategy of batch/v1 cronjobs.
func CronJobs() *registry.Strategy {
	return &registry.Strategy{
		Kind:              batchv1.SchemeGroupVersion.WithKind("CronJob"),
		Resource:          "cronjobs",
		SingularName:      "cronjob",
		ShortNames:        []string{"cj"},
		Categories:        []string{"all"},
		Namespaced:        true,
		New:               func() runtime.Object { return &batchv1.CronJob{} },
		NewList:           func() runtime.Object { return &batchv1.CronJobList{} },
		Default:           func(obj runtime.Object) { batchdefaults.CronJob(obj.(*batchv1.CronJob)) },
		ValidatesMetadata: true,
		PrepareForCreate: func(obj runtime.Object) {
			c := obj.(*batchv1.CronJob)
			c.Status = batchv1.CronJobStatus{}
			c.Generation = 1
		},
		PrepareForUpdate: func(obj, old runtime.Object) {
			c, o := obj.(*batchv1.CronJob), old.(*batchv1.CronJob)
			c.Status = o.Status
			if !apiequality.Semantic.DeepEqual(c.Spec, o.Spec) {
				c.Generation = o.Generation + 1
			}
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			return batchvalidation.ValidateCronJob(obj.(*batchv1.CronJob))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return batchvalidation.ValidateCronJobUpdate(obj.(*batchv1.CronJob), old.(*batchv1.CronJob))
		},
		AllowUnconditionalUpdate: true,
		Subresources: map[string]*registry.Subresource{
			"status": {PrepareForUpdate: func(obj, old runtime.Object) {
				obj.(*batchv1.CronJob).Spec = old.(*batchv1.CronJob).Spec
			}},
		},
	}
}
