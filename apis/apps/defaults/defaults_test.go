package defaults

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestDeployment(t *testing.T) {
	d := &appsv1.Deployment{}
	Deployment(d)
	ru := d.Spec.Strategy.RollingUpdate
	if *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || ru.MaxSurge.String() != "25%" ||
		ru.MaxUnavailable.String() != "25%" || *d.Spec.RevisionHistoryLimit != 10 || *d.Spec.ProgressDeadlineSeconds != 600 ||
		d.Spec.Template.Spec.RestartPolicy != "Always" {
		t.Errorf("defaults: %+v", d.Spec)
	}
	r := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}}}
	Deployment(r)
	if r.Spec.Strategy.RollingUpdate != nil {
		t.Error("Recreate got rollingUpdate")
	}
	kept := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0), Strategy: appsv1.DeploymentStrategy{
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(0))}}}}
	Deployment(kept)
	if *kept.Spec.Replicas != 0 || kept.Spec.Strategy.RollingUpdate.MaxSurge.IntValue() != 0 || kept.Spec.Strategy.RollingUpdate.MaxUnavailable.String() != "25%" {
		t.Errorf("set fields kept: %+v", kept.Spec)
	}
}
