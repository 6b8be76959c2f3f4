package builtin_test

import (
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kite-project/kite/registry/builtin"
)

func boolp(b bool) *bool { return &b }

// TestServiceAccountTokenMountedAsUpstream: every container and init
// container gets the read-only mount, the volume is added once, a pod
// with its own kube-api-access-* volume or mount keeps it, ephemeral
// containers get nothing.
func TestServiceAccountTokenMountedAsUpstream(t *testing.T) {
	mount := v1.VolumeMount{Name: "kube-api-access-abcde", ReadOnly: true, MountPath: builtin.DefaultAPITokenMountPath}
	tests := []struct {
		name       string
		pod        v1.PodSpec
		wantVolume string // "" = no volume added
		wantMounts [][]v1.VolumeMount
	}{
		{name: "containers and init containers",
			pod:        v1.PodSpec{InitContainers: []v1.Container{{Name: "i"}}, Containers: []v1.Container{{Name: "a"}, {Name: "b"}}, EphemeralContainers: []v1.EphemeralContainer{{}}},
			wantVolume: "kube-api-access-abcde", wantMounts: [][]v1.VolumeMount{{mount}, {mount}, {mount}}},
		{name: "an own mount at the path is kept",
			pod:        v1.PodSpec{Containers: []v1.Container{{Name: "a", VolumeMounts: []v1.VolumeMount{{Name: "mine", MountPath: builtin.DefaultAPITokenMountPath}}}}},
			wantMounts: [][]v1.VolumeMount{{{Name: "mine", MountPath: builtin.DefaultAPITokenMountPath}}}},
		{name: "an existing kube-api-access volume is used",
			pod:        v1.PodSpec{Volumes: []v1.Volume{{Name: "kube-api-access-zzzzz"}}, Containers: []v1.Container{{Name: "a"}}},
			wantMounts: [][]v1.VolumeMount{{{Name: "kube-api-access-zzzzz", ReadOnly: true, MountPath: builtin.DefaultAPITokenMountPath}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: tt.pod}
			before := len(pod.Spec.Volumes)
			builtin.MountServiceAccountToken(pod, "kube-api-access-abcde")
			var got [][]v1.VolumeMount
			for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
				got = append(got, c.VolumeMounts)
			}
			if !reflect.DeepEqual(got, tt.wantMounts) {
				t.Errorf("mounts %v, want %v", got, tt.wantMounts)
			}
			if len(pod.Spec.EphemeralContainers) > 0 && len(pod.Spec.EphemeralContainers[0].VolumeMounts) > 0 {
				t.Errorf("ephemeral container got mounts %v", pod.Spec.EphemeralContainers[0].VolumeMounts)
			}
			added := pod.Spec.Volumes[before:]
			switch {
			case tt.wantVolume == "" && len(added) > 0:
				t.Errorf("volumes added: %v", added)
			case tt.wantVolume != "" && (len(added) != 1 || added[0].Name != tt.wantVolume || !reflect.DeepEqual(added[0].Projected, builtin.TokenVolumeSource())):
				t.Errorf("volumes added %v, want %s", added, tt.wantVolume)
			}
		})
	}
}

// TestTokenVolumeSourceIsUpstreams: a 3607 s token at "token", the root
// CA at "ca.crt", the namespace at "namespace", mode 0644.
func TestTokenVolumeSourceIsUpstreams(t *testing.T) {
	p := builtin.TokenVolumeSource()
	if *p.DefaultMode != 0o644 || len(p.Sources) != 3 {
		t.Fatalf("got %+v", p)
	}
	tok, cm, dw := p.Sources[0].ServiceAccountToken, p.Sources[1].ConfigMap, p.Sources[2].DownwardAPI
	if tok == nil || tok.Path != "token" || *tok.ExpirationSeconds != 3607 || tok.Audience != "" {
		t.Errorf("token source %+v", tok)
	}
	if cm == nil || cm.Name != "kube-root-ca.crt" || len(cm.Items) != 1 || cm.Items[0].Key != "ca.crt" || cm.Items[0].Path != "ca.crt" {
		t.Errorf("configMap source %+v", cm)
	}
	if dw == nil || len(dw.Items) != 1 || dw.Items[0].Path != "namespace" || dw.Items[0].FieldRef.FieldPath != "metadata.namespace" || dw.Items[0].FieldRef.APIVersion != "v1" {
		t.Errorf("downwardAPI source %+v", dw)
	}
}

// TestShouldAutomountServiceAccountToken: the pod's word first, then the
// ServiceAccount's, else yes.
func TestShouldAutomountServiceAccountToken(t *testing.T) {
	tests := []struct {
		name      string
		pod, sa   *bool
		automount bool
	}{
		{name: "neither says", automount: true},
		{name: "sa says no", sa: boolp(false), automount: false},
		{name: "pod says yes over sa", pod: boolp(true), sa: boolp(false), automount: true},
		{name: "pod says no over sa", pod: boolp(false), sa: boolp(true), automount: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := builtin.ShouldAutomountServiceAccountToken(&v1.ServiceAccount{AutomountServiceAccountToken: tt.sa}, &v1.Pod{Spec: v1.PodSpec{AutomountServiceAccountToken: tt.pod}})
			if got != tt.automount {
				t.Errorf("got %v, want %v", got, tt.automount)
			}
		})
	}
}

// TestMirrorPodServiceAccountRefsRefused: upstream's messages for a
// mirror pod naming a ServiceAccount, a secret or a token projection.
func TestMirrorPodServiceAccountRefsRefused(t *testing.T) {
	tests := []struct {
		name string
		spec v1.PodSpec
		err  string
	}{
		{name: "plain", spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}}}},
		{name: "service account", spec: v1.PodSpec{ServiceAccountName: "x"}, err: "a mirror pod may not reference service accounts"},
		{name: "secret volume", spec: v1.PodSpec{Volumes: []v1.Volume{{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}}}}, err: "a mirror pod may not reference secrets"},
		{name: "secret env", spec: v1.PodSpec{Containers: []v1.Container{{Name: "a", EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "s"}}}}}}}, err: "a mirror pod may not reference secrets"},
		{name: "token projection", spec: v1.PodSpec{Volumes: []v1.Volume{{Name: "t", VolumeSource: v1.VolumeSource{Projected: builtin.TokenVolumeSource()}}}}, err: "a mirror pod may not use ServiceAccountToken volume projections"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := builtin.MirrorPodServiceAccountRefs(&v1.Pod{Spec: tt.spec})
			if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("got %v, want %q", err, tt.err)
			}
		})
	}
}

// TestMountableSecretRefsEnforced: with the annotation a pod may use only
// its ServiceAccount's secrets, with upstream's messages.
func TestMountableSecretRefsEnforced(t *testing.T) {
	sa := &v1.ServiceAccount{Secrets: []v1.ObjectReference{{Name: "ok"}}, ImagePullSecrets: []v1.LocalObjectReference{{Name: "pull"}}}
	sa.Name = "sa"
	env := func(name string) []v1.EnvVar {
		return []v1.EnvVar{{Name: "E", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: "k"}}}}
	}
	tests := []struct {
		name      string
		spec      v1.PodSpec
		ephemeral bool
		err       string
	}{
		{name: "listed secrets", spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Env: env("ok")}}, ImagePullSecrets: []v1.LocalObjectReference{{Name: "pull"}}}},
		{name: "volume", spec: v1.PodSpec{Volumes: []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "no"}}}}},
			err: `volume with secret.secretName="no" is not allowed because service account sa does not reference that secret`},
		{name: "container env", spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Env: env("no")}}},
			err: `container c with envVar E referencing secret.secretName="no" is not allowed because service account sa does not reference that secret`},
		{name: "init container env", spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "i", Env: env("no")}}},
			err: `init container i with envVar E referencing secret.secretName="no" is not allowed`},
		{name: "pull secret", spec: v1.PodSpec{ImagePullSecrets: []v1.LocalObjectReference{{Name: "other"}}},
			err: `imagePullSecrets[0].name="other" is not allowed because service account sa does not reference that imagePullSecret`},
		{name: "ephemeral container", ephemeral: true, spec: v1.PodSpec{EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "e", Env: env("no")}}}},
			err: `ephemeral container e with envVar E referencing secret.secretName="no" is not allowed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := builtin.MountableSecretRefs(sa, &v1.Pod{Spec: tt.spec}, tt.ephemeral)
			if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("got %v, want %q", err, tt.err)
			}
		})
	}
}
