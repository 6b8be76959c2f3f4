package validation

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/apis/apps/defaults"
)

func validTemplate(app string) corev1.PodTemplateSpec {
	t := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox",
			VolumeMounts: []corev1.VolumeMount{}}}}}
	return t
}

func fixContainers(spec *corev1.PodSpec) {
	for i := range spec.Containers {
		c := &spec.Containers[i]
		c.ImagePullPolicy, c.TerminationMessagePolicy, c.TerminationMessagePath = corev1.PullAlways, corev1.TerminationMessageReadFile, "/dev/termination-log"
	}
}

func validStatefulSet() *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.StatefulSetSpec{
			ServiceName: "web",
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template:    validTemplate("web"),
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}},
		},
	}
	// A mount of the claim template is valid: the controller adds the
	// volume to each pod.
	s.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	defaults.StatefulSet(s)
	fixContainers(&s.Spec.Template.Spec)
	return s
}

func wantErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	if len(want) == 0 && len(errs) > 0 {
		t.Fatalf("unexpected errors: %v", errs)
	}
	all := errs.ToAggregate()
	for _, w := range want {
		if all == nil || !strings.Contains(all.Error(), w) {
			t.Errorf("errors %v\ndo not contain %q", all, w)
		}
	}
}

func TestValidateStatefulSet(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*appsv1.StatefulSet)
		want   []string
	}{
		{"defaulted with a claim template mounted is valid", func(*appsv1.StatefulSet) {}, nil},
		{"hostname and subdomain are the controller's", func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Hostname, s.Spec.Template.Spec.Subdomain = "-bad-", "-bad-"
		}, nil},
		{"name is a DNS label", func(s *appsv1.StatefulSet) { s.Name = "web.v1" },
			[]string{"metadata.name: Invalid value: \"web.v1\": must not contain dots"}},
		{"unknown pod management policy", func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = "Random" },
			[]string{"spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'"}},
		{"onDelete with rollingUpdate", func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType },
			[]string{"spec.updateStrategy.rollingUpdate: Invalid value", "only allowed for updateStrategy 'RollingUpdate'"}},
		{"negative partition", func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](-1) },
			[]string{"spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0"}},
		{"maxUnavailable 0", func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(0))
		}, []string{"spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 0: cannot be 0"}},
		{"maxUnavailable over 100%", func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("101%"))
		}, []string{"spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: \"101%\": must not be greater than 100%"}},
		{"unknown retention policy", func(s *appsv1.StatefulSet) { s.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled = "Keep" },
			[]string{`spec.persistentVolumeClaimRetentionPolicy.whenScaled: Unsupported value: "Keep": supported values: "Retain", "Delete"`}},
		{"claim template without storage", func(s *appsv1.StatefulSet) {
			s.Spec.VolumeClaimTemplates[0].Spec.Resources = corev1.VolumeResourceRequirements{}
		},
			[]string{"spec.volumeClaimTemplates[0].spec.resources[storage]: Required value"}},
		{"negative ordinals start", func(s *appsv1.StatefulSet) { s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: -1} },
			[]string{"spec.ordinals.start: Invalid value: -1: must be greater than or equal to 0"}},
		{"service name is a DNS label", func(s *appsv1.StatefulSet) { s.Spec.ServiceName = "Web" },
			[]string{"spec.serviceName: Invalid value: \"Web\""}},
		{"empty selector", func(s *appsv1.StatefulSet) { s.Spec.Selector = &metav1.LabelSelector{} },
			[]string{"empty selector is invalid for statefulset"}},
		{"selector must match template", func(s *appsv1.StatefulSet) { s.Spec.Template.Labels = map[string]string{"app": "x"} },
			[]string{"spec.template.metadata.labels: Invalid value", "`selector` does not match template `labels`"}},
		{"mount of an unknown volume", func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].VolumeMounts[0].Name = "other" },
			[]string{"spec.template.spec.containers[0].volumeMounts[0].name: Not found: \"other\""}},
		{"activeDeadlineSeconds", func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](5) },
			[]string{"spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in StatefulSet is not Supported"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := validStatefulSet()
			tc.mutate(s)
			wantErrors(t, ValidateStatefulSet(s), tc.want)
		})
	}
}

func TestValidateStatefulSetUpdate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*appsv1.StatefulSet)
		want   []string
	}{
		{"replicas, template, strategy, minReadySeconds and retention may change", func(s *appsv1.StatefulSet) {
			s.Spec.Replicas = ptr.To[int32](7)
			s.Spec.Template.Spec.Containers[0].Image = "nginx"
			s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](2)
			s.Spec.MinReadySeconds = 5
			s.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
			s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 3}
		}, nil},
		{"volumeClaimTemplates are immutable", func(s *appsv1.StatefulSet) {
			s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		}, []string{"spec.volumeClaimTemplates: Invalid value", "field is immutable"}},
		{"serviceName is immutable", func(s *appsv1.StatefulSet) { s.Spec.ServiceName = "other" },
			[]string{"spec.serviceName: Invalid value: \"other\": field is immutable"}},
		{"podManagementPolicy is immutable", func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement },
			[]string{"spec.podManagementPolicy: Invalid value: \"Parallel\": field is immutable"}},
		{"selector is immutable", func(s *appsv1.StatefulSet) {
			s.Spec.Selector.MatchLabels["tier"] = "x"
			s.Spec.Template.Labels["tier"] = "x"
		}, []string{"spec.selector: Invalid value", "field is immutable"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := validStatefulSet()
			old.ResourceVersion = "1"
			s := old.DeepCopy()
			tc.mutate(s)
			wantErrors(t, ValidateStatefulSetUpdate(s, old), tc.want)
		})
	}
}

func TestValidateStatefulSetStatusUpdate(t *testing.T) {
	old := validStatefulSet()
	old.ResourceVersion = "1"
	old.Status.CollisionCount = ptr.To[int32](2)
	s := old.DeepCopy()
	s.Status = appsv1.StatefulSetStatus{Replicas: 2, ReadyReplicas: 3, AvailableReplicas: 3, CollisionCount: ptr.To[int32](1)}
	wantErrors(t, ValidateStatefulSetStatusUpdate(s, old), []string{
		"status.readyReplicas: Invalid value: 3: cannot be greater than status.replicas",
		"status.availableReplicas: Invalid value: 3: cannot be greater than status.replicas",
		"status.collisionCount: Invalid value: 1: cannot be decremented",
	})
}

func validDaemonSet() *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: validTemplate("agent"),
		},
	}
	defaults.DaemonSet(ds)
	fixContainers(&ds.Spec.Template.Spec)
	return ds
}

func TestValidateDaemonSet(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*appsv1.DaemonSet)
		want   []string
	}{
		{"defaulted is valid", func(*appsv1.DaemonSet) {}, nil},
		{"surge instead of unavailable is valid", func(ds *appsv1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(0))
			ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromString("10%"))
		}, nil},
		{"both surge and unavailable", func(ds *appsv1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(1))
		}, []string{"spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: may not be set when maxUnavailable is non-zero"}},
		{"neither surge nor unavailable", func(ds *appsv1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("0%"))
		}, []string{"spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0"}},
		{"rollingUpdate required", func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate = nil },
			[]string{"spec.updateStrategy.rollingUpdate: Required value"}},
		{"unknown strategy", func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.Type = "Recreate" },
			[]string{"spec.updateStrategy: Unsupported value"}},
		{"empty selector", func(ds *appsv1.DaemonSet) { ds.Spec.Selector = &metav1.LabelSelector{} },
			[]string{"empty selector is invalid for daemonset"}},
		{"selector must match template", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Labels = nil },
			[]string{"spec.template.metadata.labels: Invalid value", "`selector` does not match template `labels`"}},
		{"restart policy Always only", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever },
			[]string{`spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"`}},
		{"negative revisionHistoryLimit", func(ds *appsv1.DaemonSet) { ds.Spec.RevisionHistoryLimit = ptr.To[int32](-1) },
			[]string{"spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ds := validDaemonSet()
			tc.mutate(ds)
			wantErrors(t, ValidateDaemonSet(ds), tc.want)
		})
	}
}

func TestValidateDaemonSetUpdateKeepsTheSelector(t *testing.T) {
	old := validDaemonSet()
	old.ResourceVersion = "1"
	ds := old.DeepCopy()
	ds.Spec.Selector.MatchLabels["tier"] = "x"
	ds.Spec.Template.Labels["tier"] = "x"
	wantErrors(t, ValidateDaemonSetUpdate(ds, old), []string{"spec.selector: Invalid value", "field is immutable"})
}
