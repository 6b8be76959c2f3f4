package validation

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/apis/apps/defaults"
)

func validDeployment() *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}},
		},
	}
	defaults.Deployment(d)
	for i := range d.Spec.Template.Spec.Containers {
		c := &d.Spec.Template.Spec.Containers[i]
		c.ImagePullPolicy, c.TerminationMessagePolicy, c.TerminationMessagePath = corev1.PullAlways, corev1.TerminationMessageReadFile, "/dev/termination-log"
	}
	return d
}

func TestValidateDeployment(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*appsv1.Deployment)
		want   []string // each a substring of one error; none means valid
	}{
		{"defaulted is valid", func(*appsv1.Deployment) {}, nil},
		{"selector required", func(d *appsv1.Deployment) { d.Spec.Selector = nil }, []string{"spec.selector: Required value"}},
		{"empty selector", func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} },
			[]string{"spec.selector: Invalid value", "empty selector is invalid for deployment"}},
		{"template labels must match", func(d *appsv1.Deployment) { d.Spec.Template.Labels = map[string]string{"app": "x"} },
			[]string{"spec.template.metadata.labels: Invalid value", "`selector` does not match template `labels`"}},
		{"negative replicas", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](-1) },
			[]string{"spec.replicas: Invalid value: -1: must be greater than or equal to 0"}},
		{"restart policy Always only", func(d *appsv1.Deployment) { d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure },
			[]string{`spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always"`}},
		{"recreate with rollingUpdate", func(d *appsv1.Deployment) { d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType },
			[]string{"spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"}},
		{"unavailable over 100%", func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("150%"))
		},
			[]string{"spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"150%\": must not be greater than 100%"}},
		{"bad percent", func(d *appsv1.Deployment) { d.Spec.Strategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromString("ten")) },
			[]string{"spec.strategy.rollingUpdate.maxSurge: Invalid value: \"ten\": a valid percent string must be"}},
		{"deadline not above minReadySeconds", func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 600 },
			[]string{"spec.progressDeadlineSeconds: Invalid value: 600: must be greater than minReadySeconds"}},
		{"unknown strategy", func(d *appsv1.Deployment) { d.Spec.Strategy = appsv1.DeploymentStrategy{Type: "Canary"} },
			[]string{"spec.strategy: Unsupported value"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := validDeployment()
			tc.mutate(d)
			errs := ValidateDeployment(d)
			if len(tc.want) == 0 && len(errs) > 0 {
				t.Fatalf("unexpected errors: %v", errs)
			}
			all := errs.ToAggregate()
			for _, w := range tc.want {
				if all == nil || !strings.Contains(all.Error(), w) {
					t.Errorf("errors %v\ndo not contain %q", all, w)
				}
			}
		})
	}
}

func TestValidateDeploymentStatusUpdate(t *testing.T) {
	d := validDeployment()
	d.ResourceVersion = "1"
	up := d.DeepCopy()
	up.Status = appsv1.DeploymentStatus{Replicas: 2, ReadyReplicas: 1, AvailableReplicas: 2}
	errs := ValidateDeploymentStatusUpdate(up, d).ToAggregate()
	if errs == nil || !strings.Contains(errs.Error(), "status.availableReplicas: Invalid value: 2: cannot be greater than readyReplicas") {
		t.Errorf("available above ready: %v", errs)
	}
}
