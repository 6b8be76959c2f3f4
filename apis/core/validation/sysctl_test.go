package validation

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// The names of conformance's "[sig-node] Sysctls should reject invalid
// sysctls" and of upstream's validation tests.
func TestValidatePodSysctlNames(t *testing.T) {
	long := strings.Repeat("a", 254)
	for _, tc := range []struct {
		name    string
		sysctls []corev1.Sysctl
		want    []want
	}{
		{"valid names, with dots, slashes, dashes and underscores", []corev1.Sysctl{
			{Name: "kernel.shmmax", Value: "1"}, {Name: "safe-and-unsafe", Value: "1"},
			{Name: "kernel/shm_rmid_forced", Value: "1"}, {Name: "net.ipv4.ip_local_port_range", Value: "1 2"},
			{Name: "a", Value: "1"},
		}, nil},
		{"conformance's set: foo- and bar.. are invalid, the others are not", []corev1.Sysctl{
			{Name: "foo-", Value: "bar"}, {Name: "kernel.shmmax", Value: "1"},
			{Name: "safe-and-unsafe", Value: "1"}, {Name: "bar..", Value: "42"},
		}, []want{
			{field.ErrorTypeInvalid, "spec.securityContext.sysctls[0].name"},
			{field.ErrorTypeInvalid, "spec.securityContext.sysctls[3].name"},
		}},
		{"upper case", []corev1.Sysctl{{Name: "Kernel.shmmax"}},
			[]want{{field.ErrorTypeInvalid, "spec.securityContext.sysctls[0].name"}}},
		{"a leading dot", []corev1.Sysctl{{Name: ".kernel"}},
			[]want{{field.ErrorTypeInvalid, "spec.securityContext.sysctls[0].name"}}},
		{"a segment ending in underscore", []corev1.Sysctl{{Name: "kernel_.a"}},
			[]want{{field.ErrorTypeInvalid, "spec.securityContext.sysctls[0].name"}}},
		{"longer than 253", []corev1.Sysctl{{Name: long}},
			[]want{{field.ErrorTypeInvalid, "spec.securityContext.sysctls[0].name"}}},
		{"no name", []corev1.Sysctl{{Value: "1"}},
			[]want{{field.ErrorTypeRequired, "spec.securityContext.sysctls[0].name"}}},
		{"a name twice", []corev1.Sysctl{{Name: "kernel.shmmax"}, {Name: "kernel.shmmax"}},
			[]want{{field.ErrorTypeDuplicate, "spec.securityContext.sysctls[1].name"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := validPod()
			pod.Spec.SecurityContext.Sysctls = tc.sysctls
			checkErrors(t, ValidatePod(pod), tc.want...)
		})
	}
}

// What conformance's "Projected PodCertificate MaxExpirationSeconds
// validations" send, and the error text they look for.
func TestValidatePodCertificateMaxExpirationSeconds(t *testing.T) {
	const path = "spec.volumes[1].projected.sources[0].podCertificate.maxExpirationSeconds"
	for _, tc := range []struct {
		name    string
		signer  string
		seconds *int32
		message string // "" when valid
	}{
		{"unset", "e2e.example.com/signer", nil, ""},
		{"one hour, the minimum", "e2e.example.com/signer", ptr.To[int32](3600), ""},
		{"91 days, the maximum", "e2e.example.com/signer", ptr.To[int32](91 * 24 * 3600), ""},
		{"below an hour", "e2e.example.com/signer", ptr.To[int32](3599), "if provided, maxExpirationSeconds must be >= 3600"},
		{"above 91 days", "e2e.example.com/signer", ptr.To[int32](91*24*3600 + 1), "if provided, maxExpirationSeconds must be <= 7862400"},
		{"a kubernetes.io signer: 24 hours", "kubernetes.io/kube-apiserver-client-pod", ptr.To[int32](24 * 3600), ""},
		{"a kubernetes.io signer: above 24 hours", "kubernetes.io/kube-apiserver-client-pod", ptr.To[int32](24*3600 + 1), "if provided, maxExpirationSeconds must be <= 86400"},
		{"a subdomain of kubernetes.io is one too", "x.kubernetes.io/s", ptr.To[int32](24*3600 + 1), "if provided, maxExpirationSeconds must be <= 86400"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := validPod()
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{
				Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644), Sources: []corev1.VolumeProjection{{
					PodCertificate: &corev1.PodCertificateProjection{
						SignerName: tc.signer, KeyType: "ECDSAP256", CredentialBundlePath: "bundle.pem",
						MaxExpirationSeconds: tc.seconds,
					},
				}}},
			}})
			errs := ValidatePod(pod)
			if tc.message == "" {
				checkErrors(t, errs)
				return
			}
			checkErrors(t, errs, want{field.ErrorTypeInvalid, path})
			if got := fmt.Sprint(errs.ToAggregate()); !strings.Contains(got, tc.message) {
				t.Errorf("error %q does not say %q", got, tc.message)
			}
		})
	}
}
