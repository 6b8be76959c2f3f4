package defaults

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	corev1 "k8s.io/api/core/v1"
)

// TestPodMatchesKubectlGet checks a minimal pod against what
// `kubectl get pod -o yaml` shows after `kubectl run web --image=nginx` on a
// real cluster, minus what admission adds (service account, its token
// volume, priority, preemptionPolicy, tolerations).
func TestPodMatchesKubectlGet(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}
	Pod(pod)
	want := corev1.PodSpec{
		Containers: []corev1.Container{{
			Name: "web", Image: "nginx", ImagePullPolicy: corev1.PullAlways,
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		}},
		DNSPolicy:                     corev1.DNSClusterFirst,
		EnableServiceLinks:            ptr.To(true),
		RestartPolicy:                 corev1.RestartPolicyAlways,
		SchedulerName:                 "default-scheduler",
		SecurityContext:               &corev1.PodSecurityContext{},
		TerminationGracePeriodSeconds: ptr.To(int64(30)),
	}
	if !equality.Semantic.DeepEqual(pod.Spec, want) {
		t.Errorf("got %+v\nwant %+v", pod.Spec, want)
	}
}

func TestPodIsIdempotent(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "web", Image: "nginx", Ports: []corev1.ContainerPort{{ContainerPort: 80}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
		Volumes: []corev1.Volume{{Name: "v"}},
	}}
	Pod(pod)
	again := pod.DeepCopy()
	Pod(again)
	if !equality.Semantic.DeepEqual(pod, again) {
		t.Errorf("second defaulting changed the pod:\n%+v\n%+v", pod, again)
	}
}

func TestPullPolicyFor(t *testing.T) {
	cases := []struct {
		image string
		want  corev1.PullPolicy
	}{
		{"nginx", corev1.PullAlways},
		{"nginx:latest", corev1.PullAlways},
		{"nginx:1.27", corev1.PullIfNotPresent},
		{"registry:5000/nginx", corev1.PullAlways},
		{"registry:5000/nginx:1.0", corev1.PullIfNotPresent},
		{"nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", corev1.PullIfNotPresent},
		{"nginx:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", corev1.PullAlways},
	}
	for _, tc := range cases {
		t.Run(tc.image, func(t *testing.T) {
			if got := PullPolicyFor(tc.image); got != tc.want {
				t.Errorf("PullPolicyFor(%q) = %s, want %s", tc.image, got, tc.want)
			}
		})
	}
}

func TestPodNestedDefaults(t *testing.T) {
	cases := []struct {
		name  string
		pod   corev1.Pod
		check func(*corev1.Pod) bool
	}{
		{"port protocol TCP", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Ports: []corev1.ContainerPort{{ContainerPort: 80}}}}}},
			func(p *corev1.Pod) bool { return p.Spec.Containers[0].Ports[0].Protocol == corev1.ProtocolTCP }},
		{"host network copies container port to host port", corev1.Pod{Spec: corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Ports: []corev1.ContainerPort{{ContainerPort: 80}}}}}},
			func(p *corev1.Pod) bool { return p.Spec.Containers[0].Ports[0].HostPort == 80 }},
		{"requests from limits", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}}}}},
			func(p *corev1.Pod) bool {
				q := p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory]
				return q.Cmp(resource.MustParse("64Mi")) == 0
			}},
		{"existing request kept", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}},
			func(p *corev1.Pod) bool {
				q := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
				return q.Cmp(resource.MustParse("100m")) == 0
			}},
		{"quantities rounded up to milli", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.0001")}}}}}},
			func(p *corev1.Pod) bool {
				q := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
				return q.String() == "1m"
			}},
		{"probe defaults", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{LivenessProbe: &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}}}}}},
			func(p *corev1.Pod) bool {
				pr := p.Spec.Containers[0].LivenessProbe
				return pr.TimeoutSeconds == 1 && pr.PeriodSeconds == 10 && pr.SuccessThreshold == 1 && pr.FailureThreshold == 3 &&
					pr.HTTPGet.Path == "/" && pr.HTTPGet.Scheme == corev1.URISchemeHTTP
			}},
		{"env fieldRef apiVersion v1", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Env: []corev1.EnvVar{{Name: "N",
			ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}}}},
			func(p *corev1.Pod) bool { return p.Spec.Containers[0].Env[0].ValueFrom.FieldRef.APIVersion == "v1" }},
		{"volume without source is emptyDir", corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v"}}}},
			func(p *corev1.Pod) bool { return p.Spec.Volumes[0].EmptyDir != nil }},
		{"configMap defaultMode 0644", corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}}}},
			func(p *corev1.Pod) bool { return *p.Spec.Volumes[0].ConfigMap.DefaultMode == 0644 }},
		{"secret defaultMode 0644", corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}}}}},
			func(p *corev1.Pod) bool { return *p.Spec.Volumes[0].Secret.DefaultMode == 0644 }},
		{"hostPath type empty string", corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x"}}}}}},
			func(p *corev1.Pod) bool { t := p.Spec.Volumes[0].HostPath.Type; return t != nil && *t == "" }},
		{"projected token expiration one hour", corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}}}},
			func(p *corev1.Pod) bool {
				pr := p.Spec.Volumes[0].Projected
				return *pr.DefaultMode == 0644 && *pr.Sources[0].ServiceAccountToken.ExpirationSeconds == 3600
			}},
		{"deprecated serviceAccount fills serviceAccountName", corev1.Pod{Spec: corev1.PodSpec{DeprecatedServiceAccount: "builder"}},
			func(p *corev1.Pod) bool { return p.Spec.ServiceAccountName == "builder" }},
		{"serviceAccountName mirrored to serviceAccount", corev1.Pod{Spec: corev1.PodSpec{ServiceAccountName: "builder"}},
			func(p *corev1.Pod) bool { return p.Spec.DeprecatedServiceAccount == "builder" }},
		{"podIP fills podIPs", corev1.Pod{Status: corev1.PodStatus{PodIP: "10.0.0.1"}},
			func(p *corev1.Pod) bool { return len(p.Status.PodIPs) == 1 && p.Status.PodIPs[0].IP == "10.0.0.1" }},
		{"podIPs fill podIP", corev1.Pod{Status: corev1.PodStatus{PodIPs: []corev1.PodIP{{IP: "10.0.0.2"}}}},
			func(p *corev1.Pod) bool { return p.Status.PodIP == "10.0.0.2" }},
		{"explicit values kept", corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, DNSPolicy: corev1.DNSDefault,
			TerminationGracePeriodSeconds: ptr.To(int64(5)), EnableServiceLinks: ptr.To(false)}},
			func(p *corev1.Pod) bool {
				return p.Spec.RestartPolicy == corev1.RestartPolicyNever && p.Spec.DNSPolicy == corev1.DNSDefault &&
					*p.Spec.TerminationGracePeriodSeconds == 5 && !*p.Spec.EnableServiceLinks
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := tc.pod.DeepCopy()
			Pod(pod)
			if !tc.check(pod) {
				t.Errorf("defaulted pod: %+v", pod)
			}
		})
	}
}
