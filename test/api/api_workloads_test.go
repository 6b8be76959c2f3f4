package api_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

func createNamespace(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// TestKubectlDeploymentAPI: what kubectl sees of a Deployment before any
// controller acts on it: upstream's defaults, columns, scale, get all,
// explain, and generation moving with the spec.
func TestKubectlDeploymentAPI(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	createNamespace(t, client, "deploy-api")
	kubectl(t, "-n", "deploy-api", "create", "deployment", "web", "--image=busybox", "--replicas=3", "--", "sleep", "3600")

	var d appsv1.Deployment
	if err := json.Unmarshal([]byte(kubectl(t, "-n", "deploy-api", "get", "deployment", "web", "-o", "json")), &d); err != nil {
		t.Fatal(err)
	}
	ru := d.Spec.Strategy.RollingUpdate
	switch {
	case d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || ru == nil || ru.MaxSurge.String() != "25%" || ru.MaxUnavailable.String() != "25%":
		t.Errorf("strategy = %+v, want RollingUpdate 25%%/25%%", d.Spec.Strategy)
	case *d.Spec.RevisionHistoryLimit != 10 || *d.Spec.ProgressDeadlineSeconds != 600 || *d.Spec.Replicas != 3:
		t.Errorf("revisionHistoryLimit, progressDeadlineSeconds, replicas = %d, %d, %d", *d.Spec.RevisionHistoryLimit, *d.Spec.ProgressDeadlineSeconds, *d.Spec.Replicas)
	case d.Spec.Template.Spec.TerminationGracePeriodSeconds == nil || *d.Spec.Template.Spec.TerminationGracePeriodSeconds != 30:
		t.Errorf("template not defaulted as a pod spec: %+v", d.Spec.Template.Spec)
	case d.Generation != 1:
		t.Errorf("generation = %d, want 1", d.Generation)
	}

	out := kubectl(t, "-n", "deploy-api", "get", "deployments")
	if !regexp.MustCompile(`(?m)^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE\n web\s+0/3\s+0\s+0\s+\S+$`).MatchString(strings.Replace(out, "\nweb", "\n web", 1)) {
		t.Errorf("kubectl get deployments:\n%s", out)
	}
	out = kubectl(t, "-n", "deploy-api", "get", "deployments", "-o", "wide")
	if !strings.Contains(out, "SELECTOR") || !strings.Contains(out, "app=web") || !strings.Contains(out, "busybox") {
		t.Errorf("kubectl get deployments -o wide:\n%s", out)
	}

	// The embedded default runs no deployment controller: the Deployment
	// is left alone, as envtest leaves it.
	if out := kubectl(t, "-n", "deploy-api", "get", "replicasets,pods"); !strings.Contains(out, "No resources found") {
		t.Errorf("a Deployment got replica sets or pods without its controller:\n%s", out)
	}

	if out := kubectl(t, "-n", "deploy-api", "scale", "deployment", "web", "--replicas=5"); !strings.Contains(out, "deployment.apps/web scaled") {
		t.Errorf("kubectl scale: %s", out)
	}
	got, err := client.AppsV1().Deployments("deploy-api").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *got.Spec.Replicas != 5 || got.Generation != 2 {
		t.Errorf("after scale: replicas %d generation %d, want 5 and 2", *got.Spec.Replicas, got.Generation)
	}
	sc, err := client.AppsV1().Deployments("deploy-api").GetScale(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Spec.Replicas != 5 || sc.Status.Selector != "app=web" || sc.UID != got.UID {
		t.Errorf("scale = %+v", sc)
	}
	sc.Spec.Replicas = -1
	if _, err := client.AppsV1().Deployments("deploy-api").UpdateScale(context.Background(), "web", sc, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "spec.replicas: Invalid value: -1: must be greater than or equal to 0") {
		t.Errorf("negative scale: %v", err)
	}

	if out := kubectl(t, "-n", "deploy-api", "get", "all"); !strings.Contains(out, "deployment.apps/web") {
		t.Errorf("kubectl get all:\n%s", out)
	}
	if out := kubectl(t, "explain", "deployment.spec.strategy"); !strings.Contains(out, "rollingUpdate") || !strings.Contains(out, "maxSurge") && !strings.Contains(out, "RollingUpdateDeployment") {
		t.Errorf("kubectl explain deployment.spec.strategy:\n%s", out)
	}

	got.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "tier": "x"}}
	got.Spec.Template.Labels["tier"] = "x"
	_, err = client.AppsV1().Deployments("deploy-api").Update(context.Background(), got, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.selector: Invalid value:") || !strings.Contains(err.Error(), "field is immutable") {
		t.Errorf("selector update: %v", err)
	}
}

// TestWorkloadValidation: upstream's field paths and messages.
func TestWorkloadValidation(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	createNamespace(t, client, "workload-invalid")
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "other"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	tests := []struct {
		name   string
		create func() error
		want   []string
	}{
		{"deployment selector must match the template", func() error {
			_, err := client.AppsV1().Deployments("workload-invalid").Create(context.Background(), &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "d"},
				Spec:       appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Template: template},
			}, metav1.CreateOptions{})
			return err
		}, []string{`spec.template.metadata.labels: Invalid value: {"app":"other"}: ` + "`selector` does not match template `labels`"}},
		{"deployment selector required, surge and unavailable not both 0", func() error {
			zero := intstrZero()
			_, err := client.AppsV1().Deployments("workload-invalid").Create(context.Background(), &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "d"},
				Spec: appsv1.DeploymentSpec{Template: template, Strategy: appsv1.DeploymentStrategy{
					RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &zero, MaxUnavailable: &zero}}},
			}, metav1.CreateOptions{})
			return err
		}, []string{"spec.selector: Required value", "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"}},
		{"replicaset restart policy Always", func() error {
			tt := *template.DeepCopy()
			tt.Spec.RestartPolicy = corev1.RestartPolicyNever
			_, err := client.AppsV1().ReplicaSets("workload-invalid").Create(context.Background(), &appsv1.ReplicaSet{
				ObjectMeta: metav1.ObjectMeta{Name: "rs"},
				Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}, Template: tt},
			}, metav1.CreateOptions{})
			return err
		}, []string{`spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"`}},
		{"job restart policy OnFailure or Never", func() error {
			_, err := client.BatchV1().Jobs("workload-invalid").Create(context.Background(), &batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Name: "j"},
				Spec:       batchv1.JobSpec{Template: template},
			}, metav1.CreateOptions{})
			return err
		}, []string{`spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`}},
		{"cronjob schedule", func() error {
			tt := *template.DeepCopy()
			tt.Spec.RestartPolicy = corev1.RestartPolicyNever
			_, err := client.BatchV1().CronJobs("workload-invalid").Create(context.Background(), &batchv1.CronJob{
				ObjectMeta: metav1.ObjectMeta{Name: "c"},
				Spec:       batchv1.CronJobSpec{Schedule: "every minute", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tt}}},
			}, metav1.CreateOptions{})
			return err
		}, []string{`spec.schedule: Invalid value: "every minute": expected exactly 5 fields, found 2: [every minute]`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.create()
			if !apierrors.IsInvalid(err) {
				t.Fatalf("create: %v, want 422 Invalid", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

// TestKubectlJobAPI: a Job's generated selector and labels, defaults,
// columns, and that deleting it without a policy orphans (the orphan
// finalizer stays until a garbage collector acts on it).
func TestKubectlJobAPI(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	createNamespace(t, client, "job-api")
	kubectl(t, "-n", "job-api", "create", "job", "pi", "--image=busybox", "--", "true")
	j, err := client.BatchV1().Jobs("job-api").Get(context.Background(), "pi", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid := string(j.UID)
	switch {
	case j.Spec.Selector == nil || j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] != uid:
		t.Errorf("selector = %v, want the controller-uid", j.Spec.Selector)
	case j.Spec.Template.Labels[batchv1.JobNameLabel] != "pi" || j.Spec.Template.Labels["controller-uid"] != uid:
		t.Errorf("template labels = %v", j.Spec.Template.Labels)
	case *j.Spec.BackoffLimit != 6 || *j.Spec.Completions != 1 || *j.Spec.Parallelism != 1 || *j.Spec.CompletionMode != batchv1.NonIndexedCompletion:
		t.Errorf("defaults: %+v", j.Spec)
	case j.Labels[batchv1.JobNameLabel] != "pi":
		t.Errorf("job labels = %v, want its template's", j.Labels)
	}
	out := kubectl(t, "-n", "job-api", "get", "jobs")
	if !regexp.MustCompile(`NAME\s+STATUS\s+COMPLETIONS\s+DURATION\s+AGE\npi\s+Running\s+0/1\s+`).MatchString(out) {
		t.Errorf("kubectl get jobs:\n%s", out)
	}
	if err := client.BatchV1().Jobs("job-api").Delete(context.Background(), "pi", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	j, err = client.BatchV1().Jobs("job-api").Get(context.Background(), "pi", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("a Job deleted without a policy is kept until orphaned: %v", err)
	}
	if j.DeletionTimestamp == nil || !slices.Contains(j.Finalizers, metav1.FinalizerOrphanDependents) {
		t.Errorf("deleted job: deletionTimestamp %v finalizers %v", j.DeletionTimestamp, j.Finalizers)
	}
	bg := metav1.DeletePropagationForeground
	if err := client.BatchV1().Jobs("job-api").Delete(context.Background(), "pi", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	j, _ = client.BatchV1().Jobs("job-api").Get(context.Background(), "pi", metav1.GetOptions{})
	if !slices.Equal(j.Finalizers, []string{metav1.FinalizerDeleteDependents}) {
		t.Errorf("after a foreground delete finalizers = %v, want foregroundDeletion alone", j.Finalizers)
	}
	j.Finalizers = nil
	if _, err := client.BatchV1().Jobs("job-api").Update(context.Background(), j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.BatchV1().Jobs("job-api").Get(context.Background(), "pi", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("job with its finalizers gone: %v, want NotFound", err)
	}
}

func intstrZero() intstr.IntOrString { return intstr.FromInt32(0) }

const deploymentManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: applied
spec:
  replicas: 2
  selector:
    matchLabels:
      app: applied
  template:
    metadata:
      labels:
        app: applied
    spec:
      containers:
      - name: web
        image: nginx:1.25
`

// TestKubectlApplyWorkloads: client-side and server-side apply of a
// Deployment (OpenAPI for the patch and field ownership), and a CronJob's
// columns.
func TestKubectlApplyWorkloads(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	createNamespace(t, client, "workload-apply")
	path := t.TempDir() + "/d.yaml"
	if err := os.WriteFile(path, []byte(deploymentManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := kubectl(t, "-n", "workload-apply", "apply", "-f", path); !strings.Contains(out, "deployment.apps/applied created") {
		t.Fatalf("apply: %s", out)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(deploymentManifest, "replicas: 2", "replicas: 4", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := kubectl(t, "-n", "workload-apply", "apply", "-f", path); !strings.Contains(out, "deployment.apps/applied configured") {
		t.Fatalf("second apply: %s", out)
	}
	if out := kubectl(t, "-n", "workload-apply", "apply", "--server-side", "--force-conflicts", "-f", path); !strings.Contains(out, "serverside-applied") {
		t.Fatalf("server-side apply: %s", out)
	}
	d, err := client.AppsV1().Deployments("workload-apply").Get(context.Background(), "applied", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	applied := false
	for _, f := range d.ManagedFields {
		applied = applied || f.Operation == metav1.ManagedFieldsOperationApply
	}
	if *d.Spec.Replicas != 4 || d.Generation < 2 || !applied {
		t.Errorf("replicas %d generation %d managedFields %+v", *d.Spec.Replicas, d.Generation, d.ManagedFields)
	}
	kubectl(t, "-n", "workload-apply", "create", "cronjob", "tick", "--image=busybox", "--schedule=*/5 * * * *", "--", "date")
	out := kubectl(t, "-n", "workload-apply", "get", "cronjobs")
	if !regexp.MustCompile(`NAME\s+SCHEDULE\s+TIMEZONE\s+SUSPEND\s+ACTIVE\s+LAST SCHEDULE\s+AGE\ntick\s+\*/5 \* \* \* \*\s+<none>\s+False\s+0\s+<none>\s+`).MatchString(out) {
		t.Errorf("kubectl get cronjobs:\n%s", out)
	}
}
