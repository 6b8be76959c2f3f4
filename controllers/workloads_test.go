package controllers_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// The controllers of the shared Kite, which share their caches of pods,
// ReplicaSets and Jobs, each do their part on the same objects: a
// Deployment gets a ReplicaSet and its pods, a Job its pods, and once the
// Deployment is deleted the garbage collector removes the rest.
func TestControllersSharingCachesRunWorkloads(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "shared-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	template := func(app string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Template: template("web"),
	}}
	if _, err := cs.AppsV1().Deployments(ns.Name).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	jt := template("batch")
	jt.Spec.RestartPolicy = corev1.RestartPolicyNever
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "batch"}, Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](2), Completions: ptr.To[int32](2), Template: jt}}
	if _, err := cs.BatchV1().Jobs(ns.Name).Create(ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := func(app string) int {
		list, err := cs.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil {
				n++
			}
		}
		return n
	}
	if err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) {
		return pods("web") == 2 && pods("batch") == 2, nil
	}); err != nil {
		t.Fatalf("pods: web %d, batch %d, want 2 and 2", pods("web"), pods("batch"))
	}
	if err := cs.AppsV1().Deployments(ns.Name).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) {
		sets, err := cs.AppsV1().ReplicaSets(ns.Name).List(ctx, metav1.ListOptions{})
		return err == nil && len(sets.Items) == 0 && pods("web") == 0, err
	}); err != nil {
		t.Fatalf("the Deployment's ReplicaSet and pods outlived it: %d pods left", pods("web"))
	}
	if got := pods("batch"); got != 2 {
		t.Fatalf("the Job has %d pods, want 2", got)
	}
	if err := cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}
