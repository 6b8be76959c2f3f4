package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/apis/core/defaults"
)

// validPod is a defaulted pod that passes validation; each case breaks one
// rule.
func validPod() *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:         "nginx",
				Image:        "nginx:1.27",
				Ports:        []corev1.ContainerPort{{Name: "http", ContainerPort: 80}},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	defaults.Pod(pod)
	return pod
}

func TestValidatePodAcceptsDefaultedPod(t *testing.T) {
	checkErrors(t, ValidatePod(validPod()))
}

func TestValidatePodRejects(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   []want
	}{
		{"missing name", func(p *corev1.Pod) { p.Name = "" },
			[]want{{field.ErrorTypeRequired, "metadata.name"}}},
		{"name not a DNS subdomain", func(p *corev1.Pod) { p.Name = "Web_1" },
			[]want{{field.ErrorTypeInvalid, "metadata.name"}}},
		{"missing namespace", func(p *corev1.Pod) { p.Namespace = "" },
			[]want{{field.ErrorTypeRequired, "metadata.namespace"}}},
		{"bad label value", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "a b"} },
			[]want{{field.ErrorTypeInvalid, "metadata.labels"}}},
		{"no containers", func(p *corev1.Pod) { p.Spec.Containers = nil },
			[]want{{field.ErrorTypeRequired, "spec.containers"}}},
		{"container name missing", func(p *corev1.Pod) { p.Spec.Containers[0].Name = "" },
			[]want{{field.ErrorTypeRequired, "spec.containers[0].name"}}},
		{"container name not a DNS label", func(p *corev1.Pod) { p.Spec.Containers[0].Name = "Nginx" },
			[]want{{field.ErrorTypeInvalid, "spec.containers[0].name"}}},
		{"duplicate container names", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, p.Spec.Containers[0])
			p.Spec.Containers[1].Ports = nil
		}, []want{{field.ErrorTypeDuplicate, "spec.containers[1].name"}}},
		{"init container name clashes with container", func(p *corev1.Pod) {
			c := p.Spec.Containers[0]
			c.Ports = nil
			p.Spec.InitContainers = []corev1.Container{c}
		}, []want{{field.ErrorTypeDuplicate, "spec.initContainers[0].name"}}},
		{"image missing", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" },
			[]want{{field.ErrorTypeRequired, "spec.containers[0].image"}}},
		{"image with surrounding space", func(p *corev1.Pod) { p.Spec.Containers[0].Image = " nginx" },
			[]want{{field.ErrorTypeInvalid, "spec.containers[0].image"}}},
		{"pull policy unknown", func(p *corev1.Pod) { p.Spec.Containers[0].ImagePullPolicy = "Sometimes" },
			[]want{{field.ErrorTypeNotSupported, "spec.containers[0].imagePullPolicy"}}},
		{"pull policy empty (undefaulted)", func(p *corev1.Pod) { p.Spec.Containers[0].ImagePullPolicy = "" },
			[]want{{field.ErrorTypeRequired, "spec.containers[0].imagePullPolicy"}}},
		{"termination message policy unknown", func(p *corev1.Pod) { p.Spec.Containers[0].TerminationMessagePolicy = "Log" },
			[]want{{field.ErrorTypeNotSupported, "spec.containers[0].terminationMessagePolicy"}}},
		{"container port zero", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 0 },
			[]want{{field.ErrorTypeRequired, "spec.containers[0].ports[0].containerPort"}}},
		{"container port above 65535", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 70000 },
			[]want{{field.ErrorTypeInvalid, "spec.containers[0].ports[0].containerPort"}}},
		{"host port above 65535", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].HostPort = 70000 },
			[]want{{field.ErrorTypeInvalid, "spec.containers[0].ports[0].hostPort"}}},
		{"port protocol unknown", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].Protocol = "ICMP" },
			[]want{{field.ErrorTypeNotSupported, "spec.containers[0].ports[0].protocol"}}},
		{"port name too long", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].Name = "a-very-long-port-name" },
			[]want{{field.ErrorTypeInvalid, "spec.containers[0].ports[0].name"}}},
		{"duplicate port names", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{Name: "http", ContainerPort: 81, Protocol: corev1.ProtocolTCP})
		}, []want{{field.ErrorTypeDuplicate, "spec.containers[0].ports[1].name"}}},
		{"host port used twice", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports[0].HostPort = 8080
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
				Name: "sidecar", Image: "busybox", ImagePullPolicy: corev1.PullAlways,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				Ports:                    []corev1.ContainerPort{{ContainerPort: 81, HostPort: 8080, Protocol: corev1.ProtocolTCP}},
			})
		}, []want{{field.ErrorTypeDuplicate, "spec.containers[1].ports[0].hostPort"}}},
		{"host network with different host port", func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports[0].HostPort = 8080
		}, []want{{field.ErrorTypeInvalid, "spec.containers[0].ports[0].hostPort"}}},
		{"env var name missing", func(p *corev1.Pod) { p.Spec.Containers[0].Env = []corev1.EnvVar{{Value: "x"}} },
			[]want{{field.ErrorTypeRequired, "spec.containers[0].env[0].name"}}},
		{"env var name with '='", func(p *corev1.Pod) { p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A=B"}} },
			[]want{{field.ErrorTypeInvalid, "spec.containers[0].env[0].name"}}},
		{"env valueFrom with value", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "x", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}}
		}, []want{{field.ErrorTypeInvalid, "spec.containers[0].env[0].valueFrom"}}},
		{"env valueFrom empty", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{}}}
		}, []want{{field.ErrorTypeInvalid, "spec.containers[0].env[0].valueFrom"}}},
		{"env fieldRef to a field the downward API does not know", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.hostname"}}}}
		}, []want{{field.ErrorTypeInvalid, "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath"}}},
		{"env fieldRef to a field env vars may not use", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.phase"}}}}
		}, []want{{field.ErrorTypeNotSupported, "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath"}}},
		{"env fieldRef to a label", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels['app']"}}}}
		}, nil},
		{"envFrom without source", func(p *corev1.Pod) { p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{Prefix: "X_"}} },
			[]want{{field.ErrorTypeInvalid, "spec.containers[0].envFrom"}}},
		{"downward API volume item without containerName", func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
				DefaultMode: ptr.To(int32(0644)),
				Items:       []corev1.DownwardAPIVolumeFile{{Path: "cpu", ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}}}}})
		}, []want{{field.ErrorTypeRequired, "spec.volumes[1].downwardAPI.resourceFieldRef.containerName"}}},
		{"env secretKeyRef without key", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}}}}
		}, []want{{field.ErrorTypeRequired, "spec.containers[0].env[0].valueFrom.secretKeyRef.key"}}},
		{"request above limit", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			}
		}, []want{{field.ErrorTypeInvalid, "spec.containers[0].resources.requests"}}},
		{"negative request", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("-1")}
		}, []want{{field.ErrorTypeInvalid, "spec.containers[0].resources.requests[memory]"}}},
		{"unknown unprefixed resource", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{"gpu": resource.MustParse("1")}
		}, []want{{field.ErrorTypeInvalid, "spec.containers[0].resources.requests[gpu]"}, {field.ErrorTypeInvalid, "spec.containers[0].resources.requests[gpu]"}}},
		{"extended resource request without limit", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{"example.com/gpu": resource.MustParse("1")}
		}, []want{{field.ErrorTypeRequired, "spec.containers[0].resources.limits"}}},
		{"extended resource fractional", func(p *corev1.Pod) {
			q := resource.MustParse("500m")
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Limits: corev1.ResourceList{"example.com/gpu": q}, Requests: corev1.ResourceList{"example.com/gpu": q},
			}
		}, []want{{field.ErrorTypeInvalid, "spec.containers[0].resources.limits[example.com/gpu]"}, {field.ErrorTypeInvalid, "spec.containers[0].resources.requests[example.com/gpu]"}}},
		{"volume mount of unknown volume", func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].Name = "other" },
			[]want{{field.ErrorTypeNotFound, "spec.containers[0].volumeMounts[0].name"}}},
		{"volume mount path missing", func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].MountPath = "" },
			[]want{{field.ErrorTypeRequired, "spec.containers[0].volumeMounts[0].mountPath"}}},
		{"volume mount path twice", func(p *corev1.Pod) {
			p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, p.Spec.Containers[0].VolumeMounts[0])
		}, []want{{field.ErrorTypeInvalid, "spec.containers[0].volumeMounts[1].mountPath"}}},
		{"subPath escapes volume", func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].SubPath = "../etc" },
			[]want{{field.ErrorTypeInvalid, "spec.containers[0].volumeMounts.subPath"}}},
		{"volume name missing", func(p *corev1.Pod) { p.Spec.Volumes[0].Name = "" },
			[]want{{field.ErrorTypeRequired, "spec.volumes[0].name"}, {field.ErrorTypeNotFound, "spec.containers[0].volumeMounts[0].name"}}},
		{"duplicate volume names", func(p *corev1.Pod) { p.Spec.Volumes = append(p.Spec.Volumes, p.Spec.Volumes[0]) },
			[]want{{field.ErrorTypeDuplicate, "spec.volumes[1].name"}}},
		{"volume without source", func(p *corev1.Pod) { p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{} },
			[]want{{field.ErrorTypeRequired, "spec.volumes[0]"}, {field.ErrorTypeNotFound, "spec.containers[0].volumeMounts[0].name"}}},
		{"volume with two sources", func(p *corev1.Pod) {
			p.Spec.Volumes[0].HostPath = &corev1.HostPathVolumeSource{Path: "/tmp", Type: ptr.To(corev1.HostPathUnset)}
		}, []want{{field.ErrorTypeForbidden, "spec.volumes[0].hostPath"}, {field.ErrorTypeNotFound, "spec.containers[0].volumeMounts[0].name"}}},
		{"hostPath without path", func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{}}})
		}, []want{{field.ErrorTypeRequired, "spec.volumes[1].hostPath.path"}}},
		{"hostPath type unknown", func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x", Type: ptr.To(corev1.HostPathType("Pipe"))}}})
		}, []want{{field.ErrorTypeNotSupported, "spec.volumes[1].hostPath.type"}}},
		{"configMap volume without name", func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}})
		}, []want{{field.ErrorTypeRequired, "spec.volumes[1].configMap.name"}}},
		{"secret volume mode too large", func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr.To(int32(01000))}}})
		}, []want{{field.ErrorTypeInvalid, "spec.volumes[1].secret.defaultMode"}}},
		{"restartPolicy unknown", func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" },
			[]want{{field.ErrorTypeNotSupported, "spec.restartPolicy"}}},
		{"restartPolicy empty", func(p *corev1.Pod) { p.Spec.RestartPolicy = "" },
			[]want{{field.ErrorTypeRequired, "spec.restartPolicy"}}},
		{"dnsPolicy unknown", func(p *corev1.Pod) { p.Spec.DNSPolicy = "Google" },
			[]want{{field.ErrorTypeNotSupported, "spec.dnsPolicy"}}},
		{"dnsPolicy None without dnsConfig", func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSNone },
			[]want{{field.ErrorTypeRequired, "spec.dnsConfig"}}},
		{"nodeName not a DNS subdomain", func(p *corev1.Pod) { p.Spec.NodeName = "Node_1" },
			[]want{{field.ErrorTypeInvalid, "spec.nodeName"}}},
		{"serviceAccountName invalid", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "Bad!"; p.Spec.DeprecatedServiceAccount = "Bad!" },
			[]want{{field.ErrorTypeInvalid, "spec.serviceAccountName"}}},
		{"activeDeadlineSeconds zero", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To(int64(0)) },
			[]want{{field.ErrorTypeInvalid, "spec.activeDeadlineSeconds"}}},
		{"hostname not a DNS label", func(p *corev1.Pod) { p.Spec.Hostname = "a.b" },
			[]want{{field.ErrorTypeInvalid, "spec.hostname"}}},
		{"nodeSelector bad value", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a b"} },
			[]want{{field.ErrorTypeInvalid, "spec.nodeSelector"}}},
		{"toleration without key must be Exists", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpEqual, Value: "x"}}
		}, []want{{field.ErrorTypeInvalid, "spec.tolerations[0].operator"}}},
		{"toleration seconds without NoExecute", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: ptr.To(int64(5))}}
		}, []want{{field.ErrorTypeInvalid, "spec.tolerations[0].effect"}}},
		{"liveness probe without handler", func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
		}, []want{{field.ErrorTypeRequired, "spec.containers[0].livenessProbe"}}},
		{"liveness probe success threshold", func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{
				ProbeHandler:   corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}},
				TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 2, FailureThreshold: 3,
			}
		}, []want{{field.ErrorTypeInvalid, "spec.containers[0].livenessProbe.successThreshold"}}},
		{"readiness probe with two handlers", func(p *corev1.Pod) {
			p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
				ProbeHandler: corev1.ProbeHandler{
					Exec:      &corev1.ExecAction{Command: []string{"true"}},
					TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)},
				},
				TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
			}
		}, []want{{field.ErrorTypeForbidden, "spec.containers[0].readinessProbe.tcpSocket"}}},
		{"httpGet probe port out of range", func(p *corev1.Pod) {
			p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
				ProbeHandler:   corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(0), Scheme: corev1.URISchemeHTTP}},
				TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
			}
		}, []want{{field.ErrorTypeInvalid, "spec.containers[0].readinessProbe.httpGet.port"}}},
		{"probe on plain init container", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{
				Name: "init", Image: "busybox", ImagePullPolicy: corev1.PullAlways,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				ReadinessProbe:           &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}},
			}}
		}, []want{{field.ErrorTypeForbidden, "spec.initContainers[0].readinessProbe"}}},
		{"restartPolicy on regular container", func(p *corev1.Pod) {
			p.Spec.Containers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		}, []want{{field.ErrorTypeForbidden, "spec.containers[0].restartPolicy"}}},
		{"ephemeral containers on create", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", Image: "busybox", ImagePullPolicy: corev1.PullAlways, TerminationMessagePolicy: corev1.TerminationMessageReadFile}}}
		}, []want{{field.ErrorTypeForbidden, "spec.ephemeralContainers"}}},
		{"mirror pod annotation without node", func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "abc"}
		}, []want{{field.ErrorTypeInvalid, "metadata.annotations[kubernetes.io/config.mirror]"}}},
		{"terminationGracePeriodSeconds required (undefaulted)", func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = nil },
			[]want{{field.ErrorTypeRequired, "spec.terminationGracePeriodSeconds"}}},
		{"preStop sleep longer than grace period", func(p *corev1.Pod) {
			p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 31}}}
		}, []want{{field.ErrorTypeInvalid, "spec.containers[0].lifecycle.preStop.sleep"}}},
		{"lifecycle hook without handler", func(p *corev1.Pod) {
			p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{}}
		}, []want{{field.ErrorTypeRequired, "spec.containers[0].lifecycle.postStart"}}},
		{"negative runAsUser", func(p *corev1.Pod) { p.Spec.SecurityContext.RunAsUser = ptr.To(int64(-1)) },
			[]want{{field.ErrorTypeInvalid, "spec.securityContext.runAsUser"}}},
		{"seccomp profile without type", func(p *corev1.Pod) { p.Spec.SecurityContext.SeccompProfile = &corev1.SeccompProfile{} },
			[]want{{field.ErrorTypeRequired, "spec.securityContext.seccompProfile.type"}}},
		{"privileged without privilege escalation", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false)}
		}, []want{{field.ErrorTypeInvalid, "spec.containers[0].securityContext"}}},
		{"container negative runAsGroup", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsGroup: ptr.To(int64(-5))}
		}, []want{{field.ErrorTypeInvalid, "spec.containers[0].securityContext.runAsGroup"}}},
		{"nameserver not an IP", func(p *corev1.Pod) {
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"dns.example.com"}}
		}, []want{{field.ErrorTypeInvalid, "spec.dnsConfig.nameservers[0]"}}},
		{"empty preemptionPolicy", func(p *corev1.Pod) { p.Spec.PreemptionPolicy = ptr.To(corev1.PreemptionPolicy("")) },
			[]want{{field.ErrorTypeRequired, "spec.preemptionPolicy"}}},
		{"hostAlias IP invalid", func(p *corev1.Pod) { p.Spec.HostAliases = []corev1.HostAlias{{IP: "x", Hostnames: []string{"a"}}} },
			[]want{{field.ErrorTypeInvalid, "spec.hostAliases[0].ip"}}},
		{"init container restartPolicy other than Always", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{
				Name: "init", Image: "busybox", ImagePullPolicy: corev1.PullAlways,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile, RestartPolicy: ptr.To(corev1.ContainerRestartPolicy("Never")),
			}}
		}, []want{{field.ErrorTypeNotSupported, "spec.initContainers[0].restartPolicy"}}},
		{"sidecar init container may have probes", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{
				Name: "proxy", Image: "envoy", ImagePullPolicy: corev1.PullAlways,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile, RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9901)}},
					TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3},
			}}
		}, nil},
		{"node affinity without terms", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}
		}, []want{{field.ErrorTypeRequired, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"}}},
		{"node affinity In without values", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn}}}}}}}
		}, []want{{field.ErrorTypeRequired, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values"}}},
		{"preferred node affinity weight out of range", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 0}}}}
		}, []want{{field.ErrorTypeInvalid, "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight"}}},
		{"pod anti-affinity without topology key", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}}
		}, []want{
			// As upstream: Required, then the two messages of an empty label name.
			{field.ErrorTypeRequired, "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"},
			{field.ErrorTypeInvalid, "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"},
			{field.ErrorTypeInvalid, "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"},
		}},
		{"topology spread maxSkew zero", func(p *corev1.Pod) {
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 0, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule}}
		}, []want{{field.ErrorTypeInvalid, "spec.topologySpreadConstraints[0].maxSkew"}}},
		{"topology spread repeated", func(p *corev1.Pod) {
			c := corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.ScheduleAnyway}
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{c, c}
		}, []want{{field.ErrorTypeDuplicate, "spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}"}}},
		{"deletion cost not an integer", func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.PodDeletionCost: "+10"}
		}, []want{{field.ErrorTypeInvalid, "metadata.annotations[controller.kubernetes.io/pod-deletion-cost]"}}},
		{"deletion cost negative allowed", func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.PodDeletionCost: "-100"}
		}, nil},
		{"service account token without service account", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount = "", ""
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "tok", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To(int64(3600))}}}}}})
		}, []want{{field.ErrorTypeForbidden, "spec.volumes[1].projected.sources[0].serviceAccountToken"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := validPod()
			tc.mutate(pod)
			checkErrors(t, ValidatePod(pod), tc.want...)
		})
	}
}

// TestValidatePodMessages pins the exact text of a few errors, as
// kube-apiserver prints them in a 422.
func TestValidatePodMessages(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   string
	}{
		{"image required", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" },
			"spec.containers[0].image: Required value"},
		{"restart policy", func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" },
			`spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`},
		{"container port", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 70000 },
			"spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive"},
		{"request above limit", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			}
		}, `spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1`},
		{"duplicate container", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, p.Spec.Containers[0])
			p.Spec.Containers[1].Ports = nil
		}, `spec.containers[1].name: Duplicate value: "nginx"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := validPod()
			tc.mutate(pod)
			errs := ValidatePod(pod)
			if len(errs) != 1 || errs[0].Error() != tc.want {
				t.Errorf("got %v\nwant %s", errs, tc.want)
			}
		})
	}
}

func TestValidatePodUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   []want
	}{
		{"image change allowed", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.28" }, nil},
		{"labels change allowed", func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }, nil},
		{"added toleration allowed", func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists})
		}, nil},
		{"lowering activeDeadlineSeconds allowed", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To(int64(10)) }, nil},
		{"raising activeDeadlineSeconds refused", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To(int64(1000)) },
			[]want{{field.ErrorTypeInvalid, "spec.activeDeadlineSeconds"}}},
		{"removing activeDeadlineSeconds refused", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = nil },
			[]want{{field.ErrorTypeInvalid, "spec.activeDeadlineSeconds"}}},
		{"port change refused", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 81 },
			[]want{{field.ErrorTypeForbidden, "spec"}}},
		{"nodeName change refused", func(p *corev1.Pod) { p.Spec.NodeName = "node-2" },
			[]want{{field.ErrorTypeForbidden, "spec"}}},
		{"adding a container refused", func(p *corev1.Pod) {
			c := p.Spec.Containers[0]
			c.Name, c.Ports = "second", nil
			p.Spec.Containers = append(p.Spec.Containers, c)
		}, []want{{field.ErrorTypeForbidden, "spec.containers"}}},
		{"name change refused", func(p *corev1.Pod) { p.Name = "other" },
			[]want{{field.ErrorTypeInvalid, "metadata.name"}}},
		{"mirror annotation added refused", func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "h"}
		}, []want{{field.ErrorTypeForbidden, "metadata.annotations[kubernetes.io/config.mirror]"}}},
		{"changing an existing toleration refused", func(p *corev1.Pod) { p.Spec.Tolerations[0].Key = "other" },
			[]want{{field.ErrorTypeForbidden, "spec.tolerations"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validPod()
			old.ResourceVersion = "1"
			old.Spec.NodeName = "node-1"
			old.Spec.ActiveDeadlineSeconds = ptr.To(int64(100))
			old.Spec.Tolerations = []corev1.Toleration{{Key: "t", Operator: corev1.TolerationOpExists}}
			pod := old.DeepCopy()
			tc.mutate(pod)
			checkErrors(t, ValidatePodUpdate(pod, old), tc.want...)
		})
	}
}

func TestValidatePodUpdateMessage(t *testing.T) {
	old := validPod()
	old.ResourceVersion = "1"
	pod := old.DeepCopy()
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	errs := ValidatePodUpdate(pod, old)
	const prefix = "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`," +
		"`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations)," +
		"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n"
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), prefix) || !strings.Contains(errs[0].Error(), "RestartPolicy") {
		t.Errorf("got %v", errs)
	}
}

func TestValidatePodStatusUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(old, pod *corev1.Pod)
		want   []want
	}{
		{"phase and IP allowed", func(_, p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "fd00::1"}}
		}, nil},
		{"nodeName change refused", func(_, p *corev1.Pod) { p.Spec.NodeName = "other" },
			[]want{{field.ErrorTypeForbidden, "status.nodeName"}}},
		{"bad pod IP", func(_, p *corev1.Pod) { p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.300"}} },
			[]want{{field.ErrorTypeInvalid, "status.podIPs[0]"}}},
		{"two IPv4 pod IPs", func(_, p *corev1.Pod) { p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "10.0.0.2"}} },
			[]want{{field.ErrorTypeInvalid, "status.podIPs"}}},
		{"bad condition type", func(_, p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: "not valid!", Status: corev1.ConditionTrue}}
		}, []want{{field.ErrorTypeInvalid, "metadata.conditions[0].Type"}}},
		{"duplicate pod IP", func(_, p *corev1.Pod) { p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "10.0.0.1"}} },
			[]want{{field.ErrorTypeInvalid, "status.podIPs"}, {field.ErrorTypeDuplicate, "status.podIPs[1]"}}},
		{"hostIP must be the first host IP", func(_, p *corev1.Pod) {
			p.Status.HostIP = "192.168.1.1"
			p.Status.HostIPs = []corev1.HostIP{{IP: "192.168.1.2"}}
		}, []want{{field.ErrorTypeInvalid, "status.hostIPs[0].ip"}}},
		{"qosClass is immutable", func(old, p *corev1.Pod) {
			old.Status.QOSClass = corev1.PodQOSBestEffort
			p.Status.QOSClass = corev1.PodQOSGuaranteed
		}, []want{{field.ErrorTypeInvalid, "status.qosClass"}}},
		{"terminated container restarted under Never", func(old, p *corev1.Pod) {
			old.Spec.RestartPolicy = corev1.RestartPolicyNever
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
			old.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "nginx", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "nginx", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}, []want{{field.ErrorTypeForbidden, "status.containerStatuses[0].state"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validPod()
			old.ResourceVersion = "1"
			old.Spec.NodeName = "node-1"
			pod := old.DeepCopy()
			tc.mutate(old, pod)
			checkErrors(t, ValidatePodStatusUpdate(pod, old), tc.want...)
		})
	}
}

func TestValidatePodBinding(t *testing.T) {
	cases := []struct {
		name   string
		target corev1.ObjectReference
		want   []want
	}{
		{"node by name", corev1.ObjectReference{Kind: "Node", Name: "n1"}, nil},
		{"kind may be empty", corev1.ObjectReference{Name: "n1"}, nil},
		{"other kind refused", corev1.ObjectReference{Kind: "Pod", Name: "n1"}, []want{{field.ErrorTypeNotSupported, "target.kind"}}},
		{"name required", corev1.ObjectReference{Kind: "Node"}, []want{{field.ErrorTypeRequired, "target.name"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, ValidatePodBinding(&corev1.Binding{Target: tc.target}), tc.want...)
		})
	}
}
