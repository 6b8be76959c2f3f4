package admission_test

import (
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/registry/builtin"
)

// TestServiceAccountAdmissionThroughTheAPI: a pod created through the API
// runs as "default" and gets the kube-api-access-* volume mounted
// read-only in every container; automountServiceAccountToken: false on
// the pod or its ServiceAccount gets none; a ServiceAccount that does not
// exist is refused with upstream's message.
func TestServiceAccountAdmissionThroughTheAPI(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := newNamespace(t, client)
	no := false
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(t.Context(), &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "quiet"}, AutomountServiceAccountToken: &no}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	spec := func(sa string, automount *bool) v1.PodSpec {
		return v1.PodSpec{ServiceAccountName: sa, AutomountServiceAccountToken: automount,
			InitContainers: []v1.Container{{Name: "init", Image: "busybox"}}, Containers: []v1.Container{{Name: "a", Image: "busybox"}, {Name: "b", Image: "busybox"}}}
	}
	tests := []struct {
		name    string
		spec    v1.PodSpec
		wantSA  string
		mounted bool
		err     string
	}{
		{name: "default service account, token mounted", spec: spec("", nil), wantSA: "default", mounted: true},
		{name: "pod says automount false", spec: spec("", &no), wantSA: "default"},
		{name: "service account says automount false", spec: spec("quiet", nil), wantSA: "quiet"},
		{name: "missing service account", spec: spec("nobody", nil),
			err: `pods "missing-service-account" is forbidden: error looking up service account ` + ns + `/nobody: serviceaccount "nobody" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := strings.ReplaceAll(strings.ReplaceAll(tt.name, " ", "-"), ",", "")
			pod, err := client.CoreV1().Pods(ns).Create(t.Context(), &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: tt.spec}, metav1.CreateOptions{})
			if tt.err != "" {
				if !apierrors.IsForbidden(err) || err.Error() != tt.err {
					t.Fatalf("got %v, want 403 %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if pod.Spec.ServiceAccountName != tt.wantSA || pod.Spec.DeprecatedServiceAccount != tt.wantSA { //nolint:staticcheck // upstream sets both
				t.Errorf("service account %q/%q, want %q", pod.Spec.ServiceAccountName, pod.Spec.DeprecatedServiceAccount, tt.wantSA) //nolint:staticcheck
			}
			var volume string
			for _, v := range pod.Spec.Volumes {
				if strings.HasPrefix(v.Name, "kube-api-access-") && v.Projected != nil {
					volume = v.Name
				}
			}
			if !tt.mounted {
				if volume != "" || len(pod.Spec.Volumes) != 0 {
					t.Fatalf("volumes %v, want none", pod.Spec.Volumes)
				}
				return
			}
			if len(volume) != len("kube-api-access-")+5 {
				t.Fatalf("volumes %v, want one kube-api-access-<5 chars>", pod.Spec.Volumes)
			}
			for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
				want := []v1.VolumeMount{{Name: volume, ReadOnly: true, MountPath: builtin.DefaultAPITokenMountPath}}
				if !reflect.DeepEqual(c.VolumeMounts, want) {
					t.Errorf("container %s mounts %v, want %v", c.Name, c.VolumeMounts, want)
				}
			}
		})
	}
}

// TestMirrorPodsGetNoServiceAccount: a mirror pod (the node's copy of a
// static pod) is left without a ServiceAccount and token volume, as
// upstream, and one naming a ServiceAccount is refused.
func TestMirrorPodsGetNoServiceAccount(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := newNamespace(t, client)
	mirror := func(name, sa string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{v1.MirrorPodAnnotationKey: "hash"}},
			Spec: v1.PodSpec{NodeName: "n", ServiceAccountName: sa, Containers: []v1.Container{{Name: "a", Image: "busybox"}}}}
	}
	pod, err := client.CoreV1().Pods(ns).Create(t.Context(), mirror("plain", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.ServiceAccountName != "" || len(pod.Spec.Volumes) != 0 {
		t.Errorf("mirror pod got service account %q, volumes %v", pod.Spec.ServiceAccountName, pod.Spec.Volumes)
	}
	_, err = client.CoreV1().Pods(ns).Create(t.Context(), mirror("named", "default"), metav1.CreateOptions{})
	if want := `pods "named" is forbidden: a mirror pod may not reference service accounts`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}
