package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func subresourcePod() *corev1.Pod {
	grace := int64(30)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ResourceVersion: "1"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "main", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				}}},
		},
		Status: corev1.PodStatus{QOSClass: corev1.PodQOSBurstable},
	}
}

// subresourceUpdate is the stored pod (subresourcePod changed by old)
// and the update of it.
func subresourceUpdate(old, update func(*corev1.Pod)) (*corev1.Pod, *corev1.Pod) {
	stored := subresourcePod()
	if old != nil {
		old(stored)
	}
	pod := stored.DeepCopy()
	update(pod)
	return pod, stored
}

func debugger(name string) corev1.EphemeralContainer {
	return corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: "busybox",
		ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageReadFile}}
}

// TestEphemeralContainersUpdateAsUpstream: ephemeral containers may be
// added, not removed or changed; names are unique across every container;
// the target must exist; the fields an ephemeral container may not have
// are refused with upstream's paths; static pods take none.
func TestEphemeralContainersUpdateAsUpstream(t *testing.T) {
	tests := []struct {
		name   string
		old    func(*corev1.Pod)
		update func(*corev1.Pod)
		want   []string // substrings of the errors, in order; none: valid
	}{
		{name: "add one", update: func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debugger("debug"))
		}},
		{name: "add one with a target", update: func(p *corev1.Pod) {
			d := debugger("debug")
			d.TargetContainerName = "main"
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{d}
		}},
		{name: "missing target", update: func(p *corev1.Pod) {
			d := debugger("debug")
			d.TargetContainerName = "nope"
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{d}
		}, want: []string{`spec.ephemeralContainers[0].targetContainerName: Not found: "nope"`}},
		{name: "name of a regular container", update: func(p *corev1.Pod) { p.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugger("main")} },
			want: []string{`spec.ephemeralContainers[0].name: Duplicate value: "main"`}},
		{name: "ports, probes, lifecycle and resources", update: func(p *corev1.Pod) {
			d := debugger("debug")
			d.Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
			d.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
			d.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
			d.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, TimeoutSeconds: 1, PeriodSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1}
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{d}
		}, want: []string{
			"spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container",
			"spec.ephemeralContainers[0].resources: Forbidden: cannot be set for an Ephemeral Container",
			"spec.ephemeralContainers[0].lifecycle: Forbidden: cannot be set for an Ephemeral Container",
			"spec.ephemeralContainers[0].readinessProbe: Forbidden: cannot be set for an Ephemeral Container",
		}},
		{name: "remove one", old: func(p *corev1.Pod) { p.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugger("debug")} },
			update: func(p *corev1.Pod) { p.Spec.EphemeralContainers = nil },
			want:   []string{`spec.ephemeralContainers: Forbidden: existing ephemeral containers "debug" may not be removed`}},
		{name: "change one", old: func(p *corev1.Pod) { p.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugger("debug")} },
			update: func(p *corev1.Pod) { p.Spec.EphemeralContainers[0].Image = "other" },
			want:   []string{`spec.ephemeralContainers: Forbidden: existing ephemeral containers "debug" may not be changed`}},
		{name: "static pod", old: func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} },
			update: func(p *corev1.Pod) { p.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugger("debug")} },
			want:   []string{"Forbidden: static pods do not support ephemeral containers"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod, old := subresourceUpdate(tt.old, tt.update)
			checkErrorMessages(t, ValidatePodEphemeralContainersUpdate(pod, old).ToAggregate(), tt.want)
		})
	}
}

// TestPodResizeAsUpstream: cpu and memory requests and limits may change;
// nothing else, no removal, no QoS class change, no change of the
// containers; a node that does not report resources cannot resize.
func TestPodResizeAsUpstream(t *testing.T) {
	cpu := func(c *corev1.Container, req, lim string) {
		c.Resources.Requests[corev1.ResourceCPU] = resource.MustParse(req)
		c.Resources.Limits[corev1.ResourceCPU] = resource.MustParse(lim)
	}
	tests := []struct {
		name   string
		old    func(*corev1.Pod)
		update func(*corev1.Pod)
		want   []string
	}{
		{name: "cpu and memory", update: func(p *corev1.Pod) {
			cpu(&p.Spec.Containers[0], "150m", "300m")
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("256Mi")
		}},
		{name: "running with reported resources", old: func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, Resources: &corev1.ResourceRequirements{}}}
		}, update: func(p *corev1.Pod) { cpu(&p.Spec.Containers[0], "150m", "300m") }},
		{name: "running without reported resources", old: func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}, update: func(p *corev1.Pod) { cpu(&p.Spec.Containers[0], "150m", "300m") },
			want: []string{"spec: Forbidden: Pod running on node without support for resize"}},
		{name: "remove a limit", update: func(p *corev1.Pod) { delete(p.Spec.Containers[0].Resources.Limits, corev1.ResourceCPU) },
			want: []string{"spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed"}},
		{name: "QoS class changes", update: func(p *corev1.Pod) {
			cpu(&p.Spec.Containers[0], "200m", "200m")
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("128Mi")
		},
			want: []string{"spec: Invalid value: \"Burstable\": Pod QOS Class may not change as a result of resizing"}},
		{name: "other resource", update: func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceEphemeralStorage] = resource.MustParse("1Gi")
		}, want: []string{"spec: Forbidden: only cpu and memory resources are mutable"}},
		{name: "image", update: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "other" },
			want: []string{"spec: Forbidden: only cpu and memory resources are mutable"}},
		{name: "rename", update: func(p *corev1.Pod) { p.Spec.Containers[0].Name = "other" },
			want: []string{"spec.containers[0].name: Forbidden: containers may not be renamed or reordered on resize"}},
		{name: "static pod", old: func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} },
			update: func(p *corev1.Pod) { cpu(&p.Spec.Containers[0], "150m", "300m") },
			want:   []string{"Forbidden: static pods cannot be resized"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod, old := subresourceUpdate(tt.old, tt.update)
			checkErrorMessages(t, ValidatePodResize(pod, old).ToAggregate(), tt.want)
		})
	}
}

// checkErrorMessages fails unless err holds each of want (whole messages,
// for upstream's wording) and is nil when want is empty.
func checkErrorMessages(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("unexpected errors: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error; want %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("errors %v do not contain %q", err, w)
		}
	}
}

// TestPodLevelResizeAsUpstream: with 1.37's default gates
// (InPlacePodLevelResourcesVerticalScaling on) pods/resize changes the
// pod-level cpu and memory; pod-level resources, their requests and
// limits are not removed, nothing else changes at pod level, and the
// result agrees with the containers' resources as a created pod must.
func TestPodLevelResizeAsUpstream(t *testing.T) {
	q := resource.MustParse
	withPodLevel := func(p *corev1.Pod) {
		p.Spec.Resources = &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: q("500m"), corev1.ResourceMemory: q("256Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("512Mi")},
		}
	}
	tests := []struct {
		name   string
		old    func(*corev1.Pod)
		update func(*corev1.Pod)
		want   []string
	}{
		{name: "pod-level cpu and memory", old: withPodLevel, update: func(p *corev1.Pod) {
			p.Spec.Resources.Requests[corev1.ResourceCPU] = q("700m")
			p.Spec.Resources.Limits[corev1.ResourceMemory] = q("1Gi")
		}},
		{name: "pod-level and container together", old: withPodLevel, update: func(p *corev1.Pod) {
			p.Spec.Resources.Requests[corev1.ResourceCPU] = q("700m")
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = q("600m")
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = q("1")
		}},
		{name: "add pod-level cpu and memory", update: func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("500m"), corev1.ResourceMemory: q("256Mi")}}
		}},
		{name: "remove pod-level resources", old: withPodLevel, update: func(p *corev1.Pod) { p.Spec.Resources = nil },
			want: []string{"spec.resources: Forbidden: pod-level resources cannot be removed"}},
		{name: "remove a pod-level request", old: withPodLevel, update: func(p *corev1.Pod) {
			delete(p.Spec.Resources.Requests, corev1.ResourceMemory)
		}, want: []string{"spec.resources.requests: Forbidden: pod-level resource requests cannot be removed"}},
		{name: "remove a pod-level limit", old: withPodLevel, update: func(p *corev1.Pod) {
			delete(p.Spec.Resources.Limits, corev1.ResourceCPU)
		}, want: []string{"spec.resources.limits: Forbidden: pod-level resource limits cannot be removed"}},
		{name: "pod-level hugepages", old: withPodLevel, update: func(p *corev1.Pod) {
			p.Spec.Resources.Limits["hugepages-2Mi"] = q("2Mi")
			p.Spec.Resources.Requests["hugepages-2Mi"] = q("2Mi")
		}, want: []string{"spec: Forbidden: only cpu and memory resources are mutable at pod-level"}},
		{name: "pod-level request below the containers'", old: withPodLevel, update: func(p *corev1.Pod) {
			p.Spec.Resources.Requests[corev1.ResourceCPU] = q("50m")
		}, want: []string{`spec.resources.requests[cpu]: Invalid value: "50m": must be greater than or equal to aggregate container requests of 100m`}},
		{name: "pod-level limit below a container's", old: withPodLevel, update: func(p *corev1.Pod) {
			p.Spec.Resources.Limits[corev1.ResourceMemory] = q("100Mi")
			p.Spec.Resources.Requests[corev1.ResourceMemory] = q("100Mi")
		}, want: []string{`spec.resources.containers[0][memory].limits: Invalid value: "128Mi": must be less than or equal to pod limits of 100Mi`}},
		{name: "pod-level QoS class changes", old: withPodLevel, update: func(p *corev1.Pod) {
			p.Spec.Resources.Requests[corev1.ResourceCPU] = q("1")
			p.Spec.Resources.Requests[corev1.ResourceMemory] = q("512Mi")
		}, want: []string{"Pod QOS Class may not change as a result of resizing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod, old := subresourceUpdate(tt.old, tt.update)
			checkErrorMessages(t, ValidatePodResize(pod, old).ToAggregate(), tt.want)
		})
	}
}
