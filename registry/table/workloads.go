package table

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
)

func registerWorkloads(c *Convertor) {
	c.register(deploymentPrinter, &appsv1.Deployment{}, &appsv1.DeploymentList{})
	c.register(replicaSetPrinter, &appsv1.ReplicaSet{}, &appsv1.ReplicaSetList{})
	c.register(controllerRevisionPrinter, &appsv1.ControllerRevision{}, &appsv1.ControllerRevisionList{})
	c.register(jobPrinter, &batchv1.Job{}, &batchv1.JobList{})
	c.register(cronJobPrinter, &batchv1.CronJob{}, &batchv1.CronJobList{})
}

// templateColumns are the wide columns of every workload: its template's
// containers and images, and its selector.
func templateColumns(selectorDoc string) []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."},
		{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."},
		{Name: "Selector", Type: "string", Priority: 1, Description: selectorDoc},
	}
}

// templateCells are upstream's layoutContainerCells and the selector
// (deployments and replica sets print it as a selector, jobs with
// FormatLabelSelector).
func templateCells(spec *corev1.PodSpec, selector string) []any {
	names := make([]string, 0, len(spec.Containers))
	images := make([]string, 0, len(spec.Containers))
	for _, c := range spec.Containers {
		names = append(names, c.Name)
		images = append(images, c.Image)
	}
	return []any{strings.Join(names, ","), strings.Join(images, ","), selector}
}

func selectorString(sel *metav1.LabelSelector) string {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return "<error>"
	}
	return s.String()
}

func int32Value(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

var deploymentPrinter = &printer{
	columns: append([]metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Ready", Type: "string", Description: "Number of the pod with ready state"},
		{Name: "Up-to-date", Type: "string", Description: appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"]},
		{Name: "Available", Type: "string", Description: appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"]},
		ageColumn,
	}, templateColumns(appsv1.DeploymentSpec{}.SwaggerDoc()["selector"])...),
	row: func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		d := obj.(*appsv1.Deployment)
		cells := []any{d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, int32Value(d.Spec.Replicas)),
			int64(d.Status.UpdatedReplicas), int64(d.Status.AvailableReplicas), age(d.CreationTimestamp, now)}
		return append(cells, templateCells(&d.Spec.Template.Spec, selectorString(d.Spec.Selector))...), nil
	},
}

var replicaSetPrinter = &printer{
	columns: append([]metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Desired", Type: "integer", Description: appsv1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]},
		{Name: "Current", Type: "integer", Description: appsv1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]},
		{Name: "Ready", Type: "integer", Description: appsv1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]},
		ageColumn,
	}, templateColumns(appsv1.ReplicaSetSpec{}.SwaggerDoc()["selector"])...),
	row: func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		rs := obj.(*appsv1.ReplicaSet)
		cells := []any{rs.Name, int64(int32Value(rs.Spec.Replicas)), int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas), age(rs.CreationTimestamp, now)}
		return append(cells, templateCells(&rs.Spec.Template.Spec, selectorString(rs.Spec.Selector))...), nil
	},
}

var controllerRevisionPrinter = &printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Controller", Type: "string", Description: "Controller of the object"},
		{Name: "Revision", Type: "string", Description: appsv1.ControllerRevision{}.SwaggerDoc()["revision"]},
		ageColumn,
	},
	row: func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		cr := obj.(*appsv1.ControllerRevision)
		controller := "<none>"
		if ref := metav1.GetControllerOf(cr); ref != nil {
			gv, _ := schema.ParseGroupVersion(ref.APIVersion)
			controller = strings.ToLower(gv.WithKind(ref.Kind).GroupKind().String()) + "/" + ref.Name
		}
		return []any{cr.Name, controller, cr.Revision, age(cr.CreationTimestamp, now)}, nil
	},
}

var jobPrinter = &printer{
	columns: append([]metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Status", Type: "string", Description: "Status of the job."},
		{Name: "Completions", Type: "string", Description: batchv1.JobStatus{}.SwaggerDoc()["succeeded"]},
		{Name: "Duration", Type: "string", Description: "Time required to complete the job."},
		ageColumn,
	}, templateColumns(batchv1.JobSpec{}.SwaggerDoc()["selector"])...),
	row: func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		j := obj.(*batchv1.Job)
		var completions string
		switch p := int32Value(j.Spec.Parallelism); {
		case j.Spec.Completions != nil:
			completions = fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
		case p > 1:
			completions = fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, p)
		default:
			completions = fmt.Sprintf("%d/1", j.Status.Succeeded)
		}
		var took string
		switch {
		case j.Status.StartTime == nil:
		case j.Status.CompletionTime == nil:
			took = duration.HumanDuration(now.Sub(j.Status.StartTime.Time))
		default:
			took = duration.HumanDuration(j.Status.CompletionTime.Sub(j.Status.StartTime.Time))
		}
		cells := []any{j.Name, JobStatus(j), completions, took, age(j.CreationTimestamp, now)}
		return append(cells, templateCells(&j.Spec.Template.Spec, metav1.FormatLabelSelector(j.Spec.Selector))...), nil
	},
}

// JobStatus is the Status column of a Job, as upstream's printJob.
func JobStatus(j *batchv1.Job) string {
	has := func(t batchv1.JobConditionType) bool {
		for _, c := range j.Status.Conditions {
			if c.Type == t && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	}
	switch {
	case has(batchv1.JobComplete):
		return "Complete"
	case has(batchv1.JobFailed):
		return "Failed"
	case j.DeletionTimestamp != nil:
		return "Terminating"
	case has(batchv1.JobSuspended):
		return "Suspended"
	case has(batchv1.JobFailureTarget):
		return "FailureTarget"
	case has(batchv1.JobSuccessCriteriaMet):
		return "SuccessCriteriaMet"
	}
	return "Running"
}

var cronJobPrinter = &printer{
	columns: append([]metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Schedule", Type: "string", Description: batchv1.CronJobSpec{}.SwaggerDoc()["schedule"]},
		{Name: "Timezone", Type: "string", Description: batchv1.CronJobSpec{}.SwaggerDoc()["timeZone"]},
		{Name: "Suspend", Type: "boolean", Description: batchv1.CronJobSpec{}.SwaggerDoc()["suspend"]},
		{Name: "Active", Type: "integer", Description: batchv1.CronJobStatus{}.SwaggerDoc()["active"]},
		{Name: "Last Schedule", Type: "string", Description: batchv1.CronJobStatus{}.SwaggerDoc()["lastScheduleTime"]},
		ageColumn,
	}, templateColumns(batchv1.JobSpec{}.SwaggerDoc()["selector"])...),
	row: func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		c := obj.(*batchv1.CronJob)
		last := "<none>"
		if t := c.Status.LastScheduleTime; t != nil {
			last = age(*t, now)
		}
		tz := "<none>"
		if c.Spec.TimeZone != nil {
			tz = *c.Spec.TimeZone
		}
		suspend := "<unset>"
		if c.Spec.Suspend != nil {
			suspend = "False"
			if *c.Spec.Suspend {
				suspend = "True"
			}
		}
		cells := []any{c.Name, c.Spec.Schedule, tz, suspend, int64(len(c.Status.Active)), last, age(c.CreationTimestamp, now)}
		return append(cells, templateCells(&c.Spec.JobTemplate.Spec.Template.Spec, metav1.FormatLabelSelector(c.Spec.JobTemplate.Spec.Selector))...), nil
	},
}
