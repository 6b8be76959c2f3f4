package containerconfig

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestSecurityProfilesAsTheKubeletPassesThem: the seccomp and AppArmor
// profiles of the container's config are the kubelet's
// (getSeccompProfile without seccompDefault, getAppArmorProfile): the
// container's field wins over the pod's, no field is Unconfined seccomp
// and no AppArmor profile, Localhost seccomp is a file under
// <root-dir>/seccomp, the deprecated AppArmor annotation is read before
// the pod's field and the deprecated string form is passed beside the
// profile.
func TestSecurityProfilesAsTheKubeletPassesThem(t *testing.T) {
	local := func(s string) *string { return &s }
	unconfined := &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
	runtimeDefault := &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
	cases := []struct {
		name        string
		pod         *v1.PodSecurityContext
		container   *v1.SecurityContext
		annotations map[string]string
		seccomp     *runtimeapi.SecurityProfile
		apparmor    *runtimeapi.SecurityProfile
		deprecated  string
		err         string
	}{
		{name: "nothing set is unconfined seccomp and no apparmor", seccomp: unconfined},
		{name: "pod runtime default", pod: &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}}, seccomp: runtimeDefault},
		{name: "container unconfined over pod runtime default",
			pod:       &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}},
			container: &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}}, seccomp: unconfined},
		{name: "localhost is a file under the profile root",
			container: &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: local("profiles/audit.json")}},
			seccomp:   &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "/var/lib/kite/seccomp/profiles/audit.json"}},
		{name: "localhost without a name", container: &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost}},
			err: "localhostProfile must be set if seccompProfile type is Localhost."},
		{name: "apparmor runtime default from the pod", pod: &v1.PodSecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}},
			seccomp: unconfined, apparmor: runtimeDefault, deprecated: "runtime/default"},
		{name: "apparmor container unconfined over the pod's",
			pod:       &v1.PodSecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}},
			container: &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}},
			seccomp:   unconfined, apparmor: unconfined, deprecated: "unconfined"},
		{name: "apparmor localhost", container: &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: local("k8s-deny-write")}},
			seccomp: unconfined, apparmor: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "k8s-deny-write"}, deprecated: "localhost/k8s-deny-write"},
		{name: "apparmor annotation before the pod's field",
			pod:         &v1.PodSecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}},
			annotations: map[string]string{"container.apparmor.security.beta.kubernetes.io/c": "localhost/from-annotation"},
			seccomp:     unconfined, apparmor: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "from-annotation"}, deprecated: "localhost/from-annotation"},
		{name: "apparmor annotation of another container is not this one's",
			annotations: map[string]string{"container.apparmor.security.beta.kubernetes.io/other": "unconfined"}, seccomp: unconfined},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := v1.Container{Name: "c", SecurityContext: tc.container}
			pod := testPod("sec", c)
			pod.Spec.SecurityContext = tc.pod
			pod.Annotations = tc.annotations
			sc, err := securityContext(pod, &c, Inputs{SeccompProfileRoot: "/var/lib/kite/seccomp"})
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.seccomp, sc.Seccomp, protocmp.Transform()); d != "" {
				t.Errorf("seccomp (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.apparmor, sc.Apparmor, protocmp.Transform()); d != "" {
				t.Errorf("apparmor (-want +got):\n%s", d)
			}
			if sc.ApparmorProfile != tc.deprecated {
				t.Errorf("deprecated apparmor profile %q, want %q", sc.ApparmorProfile, tc.deprecated)
			}
		})
	}
}

// TestSandboxRunsUnderTheRuntimeDefaultSeccomp: the sandbox's seccomp
// profile is RuntimeDefault whatever the pod asks, as the kubelet's.
func TestSandboxRunsUnderTheRuntimeDefaultSeccomp(t *testing.T) {
	pod := testPod("sec", v1.Container{Name: "c"})
	pod.Spec.SecurityContext = &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}}
	got := SandboxConfig(pod, Inputs{}, 0).Linux.SecurityContext.Seccomp
	if got.GetProfileType() != runtimeapi.SecurityProfile_RuntimeDefault {
		t.Errorf("sandbox seccomp %v, want RuntimeDefault", got)
	}
}

// TestAppArmorUnenforceableAsTheKubeletsAdmission: a pending pod that asks
// for a confining AppArmor profile (pod or container field, or the
// deprecated annotation) is refused on a node without AppArmor; unconfined
// profiles, pods already running and nodes with AppArmor are not; an empty
// localhost name is refused everywhere.
func TestAppArmorUnenforceableAsTheKubeletsAdmission(t *testing.T) {
	noHost := errors.New("AppArmor is not enabled on the host")
	empty := " "
	cases := []struct {
		name        string
		pod         *v1.PodSecurityContext
		container   *v1.SecurityContext
		annotations map[string]string
		phase       v1.PodPhase
		host        error
		want        string
	}{
		{name: "no profile", host: noHost},
		{name: "unconfined field", container: &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}}, host: noHost},
		{name: "unconfined annotation", annotations: map[string]string{"container.apparmor.security.beta.kubernetes.io/c": "unconfined"}, host: noHost},
		{name: "runtime default on a node without apparmor", container: &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}},
			host: noHost, want: "AppArmor is not enabled on the host"},
		{name: "pod field", pod: &v1.PodSecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}},
			host: noHost, want: "AppArmor is not enabled on the host"},
		{name: "annotation", annotations: map[string]string{"container.apparmor.security.beta.kubernetes.io/c": "runtime/default"},
			host: noHost, want: "AppArmor is not enabled on the host"},
		{name: "running pods are not checked again", container: &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}},
			phase: v1.PodRunning, host: noHost},
		{name: "node with apparmor", container: &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}}},
		{name: "empty localhost name", container: &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: &empty}},
			want: `invalid empty AppArmor profile name: "&AppArmorProfile{Type:Localhost,LocalhostProfile:* ,}"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod("sec", v1.Container{Name: "c", SecurityContext: tc.container})
			pod.Spec.SecurityContext = tc.pod
			pod.Annotations = tc.annotations
			pod.Status.Phase = tc.phase
			err := AppArmorUnenforceable(pod, tc.host)
			if got := fmt.Sprint(err); (err == nil) != (tc.want == "") || err != nil && got != tc.want {
				t.Errorf("AppArmorUnenforceable = %v, want %q", err, tc.want)
			}
		})
	}
}
