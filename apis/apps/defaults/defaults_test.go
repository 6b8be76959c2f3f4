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

func TestStatefulSetAndDaemonSetDefaults(t *testing.T) {
	s := &appsv1.StatefulSet{}
	StatefulSet(s)
	ru := s.Spec.UpdateStrategy.RollingUpdate
	switch {
	case s.Spec.PodManagementPolicy != appsv1.OrderedReadyPodManagement, s.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType:
		t.Errorf("policy %q strategy %q", s.Spec.PodManagementPolicy, s.Spec.UpdateStrategy.Type)
	case ru == nil || *ru.Partition != 0 || ru.MaxUnavailable.String() != "1":
		t.Errorf("rollingUpdate = %+v, want partition 0 maxUnavailable 1", ru)
	case *s.Spec.Replicas != 1 || *s.Spec.RevisionHistoryLimit != 10:
		t.Errorf("replicas %d revisionHistoryLimit %d", *s.Spec.Replicas, *s.Spec.RevisionHistoryLimit)
	case s.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType ||
		s.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType:
		t.Errorf("retention = %+v", s.Spec.PersistentVolumeClaimRetentionPolicy)
	}
	// OnDelete given: no rollingUpdate appears.
	s = &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}}}
	StatefulSet(s)
	if s.Spec.UpdateStrategy.RollingUpdate != nil {
		t.Errorf("OnDelete got a rollingUpdate: %+v", s.Spec.UpdateStrategy.RollingUpdate)
	}
	ds := &appsv1.DaemonSet{}
	DaemonSet(ds)
	dru := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || dru.MaxUnavailable.String() != "1" || dru.MaxSurge.String() != "0" || *ds.Spec.RevisionHistoryLimit != 10 {
		t.Errorf("daemonset defaults: %+v", ds.Spec)
	}
}
