package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func validRC() *corev1.ReplicationController {
	return &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](2), Selector: map[string]string{"app": "web"},
			Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, TerminationGracePeriodSeconds: ptr.To[int64](30),
					Containers: []corev1.Container{{Name: "c", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageReadFile}}}}},
	}
}

// TestValidateReplicationController checks upstream's rules and paths.
func TestValidateReplicationController(t *testing.T) {
	tests := []struct {
		name   string
		change func(rc *corev1.ReplicationController)
		want   []want
	}{
		{"valid", func(*corev1.ReplicationController) {}, nil},
		{"no selector", func(rc *corev1.ReplicationController) { rc.Spec.Selector = nil }, []want{{field.ErrorTypeRequired, "spec.selector"}}},
		{"selector not matching the template", func(rc *corev1.ReplicationController) { rc.Spec.Selector = map[string]string{"app": "db"} },
			[]want{{field.ErrorTypeInvalid, "spec.template.metadata.labels"}}},
		{"no template", func(rc *corev1.ReplicationController) { rc.Spec.Template = nil }, []want{{field.ErrorTypeRequired, "spec.template"}}},
		{"negative replicas", func(rc *corev1.ReplicationController) { rc.Spec.Replicas = ptr.To[int32](-1) }, []want{{field.ErrorTypeInvalid, "spec.replicas"}}},
		{"restart policy not Always", func(rc *corev1.ReplicationController) {
			rc.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		},
			[]want{{field.ErrorTypeNotSupported, "spec.template.spec.restartPolicy"}}},
		{"active deadline", func(rc *corev1.ReplicationController) { rc.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](5) },
			[]want{{field.ErrorTypeInvalid, "spec.template.spec.activeDeadlineSeconds"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := validRC()
			tc.change(rc)
			checkErrors(t, ValidateReplicationController(rc), tc.want...)
		})
	}
}
