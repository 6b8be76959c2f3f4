package builtin_test

import (
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/apis/core/defaults"
	"github.com/kite-project/kite/registry/builtin"
)

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestResolvePriorityAsUpstream: the class's value and policy, the
// default class, priority 0 without one, and upstream's refusals of a
// pod's own conflicting values.
func TestResolvePriorityAsUpstream(t *testing.T) {
	never := v1.PreemptNever
	lower := v1.PreemptLowerPriority
	high := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000, PreemptionPolicy: &never}
	tests := []struct {
		name      string
		pod       v1.PodSpec
		class     *schedulingv1.PriorityClass
		priority  int32
		policy    *v1.PreemptionPolicy
		className string
		err       string
	}{
		{name: "no class, no default", priority: 0, policy: &lower},
		{name: "class", pod: v1.PodSpec{PriorityClassName: "high"}, class: high, priority: 1000, policy: &never, className: "high"},
		{name: "default class names itself", class: high, priority: 1000, policy: &never, className: "high"},
		{name: "matching priority", pod: v1.PodSpec{Priority: ptr.To[int32](1000)}, class: high, priority: 1000, policy: &never, className: "high"},
		{name: "conflicting priority", pod: v1.PodSpec{Priority: ptr.To[int32](7)}, class: high,
			err: "the integer value of priority (7) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name"},
		{name: "conflicting policy", pod: v1.PodSpec{PreemptionPolicy: &lower}, class: high,
			err: "the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec; priority admission controller computed Never from the given PriorityClass name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: tt.pod}
			err := builtin.ResolvePriority(pod, tt.class)
			if errString(err) != tt.err {
				t.Fatalf("error %q, want %q", errString(err), tt.err)
			}
			if err != nil {
				return
			}
			if *pod.Spec.Priority != tt.priority || !reflect.DeepEqual(pod.Spec.PreemptionPolicy, tt.policy) || pod.Spec.PriorityClassName != tt.className {
				t.Errorf("got priority %d policy %v class %q", *pod.Spec.Priority, pod.Spec.PreemptionPolicy, pod.Spec.PriorityClassName)
			}
		})
	}
}

// TestDefaultPriorityClassIsTheLowestGlobalDefault: as upstream, when a
// race made two.
func TestDefaultPriorityClassIsTheLowestGlobalDefault(t *testing.T) {
	classes := []schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Value: 10, GlobalDefault: true},
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Value: 5, GlobalDefault: true},
		{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Value: 1},
	}
	if got := builtin.DefaultPriorityClass(classes); got == nil || got.Name != "b" {
		t.Errorf("got %v, want b", got)
	}
	if got := builtin.DefaultPriorityClass(classes[2:]); got != nil {
		t.Errorf("got %v, want none", got)
	}
}

// TestApplyRuntimeClassAsUpstream: overhead set or refused, nodeSelector
// merged or refused on conflict, tolerations merged without redundancy.
func TestApplyRuntimeClassAsUpstream(t *testing.T) {
	overhead := v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}
	rc := &nodev1.RuntimeClass{
		Overhead: &nodev1.Overhead{PodFixed: overhead},
		Scheduling: &nodev1.Scheduling{
			NodeSelector: map[string]string{"sandbox": "true"},
			Tolerations:  []v1.Toleration{{Key: "sandbox", Operator: v1.TolerationOpExists}},
		},
	}
	tests := []struct {
		name        string
		pod         v1.PodSpec
		rc          *nodev1.RuntimeClass
		selector    map[string]string
		tolerations []v1.Toleration
		err         string
	}{
		{name: "no class", pod: v1.PodSpec{NodeSelector: map[string]string{"a": "b"}}, selector: map[string]string{"a": "b"}},
		{name: "merged", rc: rc, pod: v1.PodSpec{NodeSelector: map[string]string{"a": "b"}, Tolerations: []v1.Toleration{{Key: "sandbox", Operator: v1.TolerationOpEqual, Value: "x"}}},
			selector: map[string]string{"a": "b", "sandbox": "true"}, tolerations: []v1.Toleration{{Key: "sandbox", Operator: v1.TolerationOpExists}}},
		{name: "selector from the class", rc: rc, selector: map[string]string{"sandbox": "true"}, tolerations: rc.Scheduling.Tolerations},
		{name: "selector conflict", rc: rc, pod: v1.PodSpec{NodeSelector: map[string]string{"sandbox": "false"}},
			err: "conflict: runtimeClass.scheduling.nodeSelector[sandbox] = true; pod.spec.nodeSelector[sandbox] = false"},
		{name: "other overhead", rc: rc, pod: v1.PodSpec{Overhead: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}},
			err: "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: tt.pod}
			err := builtin.ApplyRuntimeClass(pod, tt.rc)
			if errString(err) != tt.err {
				t.Fatalf("error %q, want %q", errString(err), tt.err)
			}
			if err != nil {
				return
			}
			if !reflect.DeepEqual(pod.Spec.NodeSelector, tt.selector) || !reflect.DeepEqual(pod.Spec.Tolerations, tt.tolerations) {
				t.Errorf("selector %v tolerations %v, want %v %v", pod.Spec.NodeSelector, pod.Spec.Tolerations, tt.selector, tt.tolerations)
			}
			if tt.rc != nil && !reflect.DeepEqual(pod.Spec.Overhead, overhead) {
				t.Errorf("overhead %v, want %v", pod.Spec.Overhead, overhead)
			}
			if err := builtin.ValidateRuntimeClassOverhead(pod, tt.rc); err != nil {
				t.Errorf("validation after admission: %v", err)
			}
		})
	}
	if err := builtin.ValidateRuntimeClassOverhead(&v1.Pod{Spec: v1.PodSpec{Overhead: overhead}}, nil); errString(err) != "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead" {
		t.Errorf("overhead without a class: %v", err)
	}
}

func resources(kv ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// TestLimitRangeDefaultsAndLimitsAsUpstream: defaults fill what
// containers leave out (with the annotation); min, max and ratio refuse
// with upstream's messages, for containers, pods and claims.
func TestLimitRangeDefaultsAndLimitsAsUpstream(t *testing.T) {
	lr := &v1.LimitRange{Spec: v1.LimitRangeSpec{Limits: []v1.LimitRangeItem{{
		Type: v1.LimitTypeContainer,
		Min:  resources("cpu", "100m", "memory", "10Mi"), Max: resources("cpu", "1", "memory", "1Gi"),
		Default: resources("cpu", "500m"), DefaultRequest: resources("cpu", "200m"),
		MaxLimitRequestRatio: resources("cpu", "4"),
	}}}}
	defaults.LimitRange(lr)
	if got := lr.Spec.Limits[0].Default[v1.ResourceMemory]; got.String() != "1Gi" {
		t.Errorf("default memory limit %s, want the max 1Gi (upstream's LimitRange defaults)", got.String())
	}
	if got := lr.Spec.Limits[0].DefaultRequest[v1.ResourceMemory]; got.String() != "1Gi" {
		t.Errorf("default memory request %s, want the default limit 1Gi", got.String())
	}

	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}, {Name: "d", Resources: v1.ResourceRequirements{Requests: resources("cpu", "300m")}}}}}
	builtin.LimitRangeDefaults(lr, pod)
	if got := pod.Spec.Containers[0].Resources; !reflect.DeepEqual(got.Requests, resources("cpu", "200m", "memory", "1Gi")) || !reflect.DeepEqual(got.Limits, resources("cpu", "500m", "memory", "1Gi")) {
		t.Errorf("container c: %v", got)
	}
	if got := pod.Spec.Containers[1].Resources.Requests[v1.ResourceCPU]; got.String() != "300m" {
		t.Errorf("container d's own request became %s", got.String())
	}
	want := "LimitRanger plugin set: cpu, memory request for container c; cpu, memory limit for container c; memory request for container d; cpu, memory limit for container d"
	if got := pod.Annotations[builtin.LimitRangerAnnotation]; got != want {
		t.Errorf("annotation %q, want %q", got, want)
	}
	if err := builtin.ValidatePodLimits(lr, pod); err != nil {
		t.Errorf("defaulted pod refused: %v", err)
	}

	tests := []struct {
		name string
		c    v1.ResourceRequirements
		err  string
	}{
		{name: "below min", c: v1.ResourceRequirements{Requests: resources("cpu", "50m", "memory", "100Mi"), Limits: resources("cpu", "100m", "memory", "100Mi")},
			err: "minimum cpu usage per Container is 100m, but request is 50m"},
		{name: "above max", c: v1.ResourceRequirements{Requests: resources("cpu", "500m", "memory", "100Mi"), Limits: resources("cpu", "2", "memory", "100Mi")},
			err: "maximum cpu usage per Container is 1, but limit is 2"},
		{name: "no limit", c: v1.ResourceRequirements{Requests: resources("cpu", "500m", "memory", "100Mi")},
			err: "[maximum cpu usage per Container is 1.  No limit is specified, maximum memory usage per Container is 1Gi.  No limit is specified, cpu max limit to request ratio per Container is 4, but no limit is specified or limit is 0]"},
		{name: "ratio", c: v1.ResourceRequirements{Requests: resources("cpu", "200m", "memory", "100Mi"), Limits: resources("cpu", "1", "memory", "100Mi")},
			err: "cpu max limit to request ratio per Container is 4, but provided ratio is 5.000000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: tt.c}}}}
			err := builtin.ValidatePodLimits(lr, pod)
			// Map order makes the aggregate's order vary: compare sorted parts.
			if sortedParts(errString(err)) != sortedParts(tt.err) {
				t.Errorf("error %q, want %q", errString(err), tt.err)
			}
		})
	}

	podItem := &v1.LimitRange{Spec: v1.LimitRangeSpec{Limits: []v1.LimitRangeItem{{Type: v1.LimitTypePod, Max: resources("cpu", "1")}}}}
	two := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{
		{Name: "a", Resources: v1.ResourceRequirements{Limits: resources("cpu", "600m")}},
		{Name: "b", Resources: v1.ResourceRequirements{Limits: resources("cpu", "600m")}},
	}}}
	if err := builtin.ValidatePodLimits(podItem, two); errString(err) != "maximum cpu usage per Pod is 1, but limit is 1200m" {
		t.Errorf("pod item: %v", err)
	}
	claimItem := &v1.LimitRange{Spec: v1.LimitRangeSpec{Limits: []v1.LimitRangeItem{{Type: v1.LimitTypePersistentVolumeClaim, Min: resources("storage", "1Gi"), Max: resources("storage", "2Gi")}}}}
	claim := &v1.PersistentVolumeClaim{Spec: v1.PersistentVolumeClaimSpec{Resources: v1.VolumeResourceRequirements{Requests: resources("storage", "3Gi")}}}
	if err := builtin.ValidateClaimLimits(claimItem, claim); errString(err) != "maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 3Gi" {
		t.Errorf("claim item: %v", err)
	}
}

func sortedParts(s string) string {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	parts := strings.Split(s, ", ")
	for i := range parts {
		for j := i + 1; j < len(parts); j++ {
			if parts[j] < parts[i] {
				parts[i], parts[j] = parts[j], parts[i]
			}
		}
	}
	return strings.Join(parts, "|")
}
