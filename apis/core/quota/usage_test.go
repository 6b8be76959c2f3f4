package quota_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/apis/core/quota"
)

func parseGR(s string) schema.GroupResource { return schema.ParseGroupResource(s) }

// TestPodUsageAsUpstream: requests and limits with init containers and
// overhead; terminal pods and pods past their grace period use only
// their count.
func TestPodUsageAsUpstream(t *testing.T) {
	now := time.Now()
	pod := podWith(list("cpu", "100m", "memory", "1Gi", "hugepages-2Mi", "2Mi", "example.com/gpu", "1"), list("cpu", "1", "memory", "1Gi"))
	pod.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{Requests: list("cpu", "500m")}}}
	pod.Spec.Overhead = list("cpu", "10m")
	want := list("count/pods", "1", "pods", "1", "cpu", "510m", "requests.cpu", "510m", "limits.cpu", "1010m",
		"memory", "1Gi", "requests.memory", "1Gi", "limits.memory", "1Gi", "hugepages-2Mi", "2Mi", "requests.hugepages-2Mi", "2Mi", "requests.example.com/gpu", "1")
	if got := quota.PodUsage(pod, now); !quota.Equals(got, want) {
		t.Errorf("usage %s\nwant  %s", quota.PrettyPrint(got), quota.PrettyPrint(want))
	}
	done := pod.DeepCopy()
	done.Status.Phase = corev1.PodSucceeded
	if got := quota.PodUsage(done, now); !quota.Equals(got, list("count/pods", "1")) {
		t.Errorf("terminal pod uses %s", quota.PrettyPrint(got))
	}
	gone := pod.DeepCopy()
	gone.DeletionTimestamp = &metav1.Time{Time: now.Add(-time.Minute)}
	gone.DeletionGracePeriodSeconds = ptr.To[int64](30)
	if got := quota.PodUsage(gone, now); !quota.Equals(got, list("count/pods", "1")) {
		t.Errorf("pod past its grace period uses %s", quota.PrettyPrint(got))
	}
}

// TestCountedResourceNames: count/<resource>.<group> and the legacy names.
func TestCountedResourceNames(t *testing.T) {
	for name, want := range map[corev1.ResourceName]schema.GroupResource{
		"count/deployments.apps": {Group: "apps", Resource: "deployments"},
		"count/pods":             {Resource: "pods"},
		"secrets":                {Resource: "secrets"},
	} {
		if got, ok := quota.CountedResource(name); !ok || got != want {
			t.Errorf("%s: got %v %v, want %v", name, got, ok, want)
		}
	}
	if _, ok := quota.CountedResource("requests.cpu"); ok {
		t.Error("requests.cpu is no count")
	}
}
