package resourcequota_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/apis/core/quota"
	"github.com/kite-project/kite/controllers/resourcequota"
)

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func pod(cpu string, phase corev1.PodPhase, deadline *int64) *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{ActiveDeadlineSeconds: deadline, Containers: []corev1.Container{{Name: "c",
		Resources: corev1.ResourceRequirements{Requests: rl("cpu", cpu)}}}}, Status: corev1.PodStatus{Phase: phase}}
}

// TestStatusAsUpstream: status.hard is spec.hard; used counts what
// matches the quota's scopes, zero for what nothing uses, only the hard
// resources; dirty when anything differs.
func TestStatusAsUpstream(t *testing.T) {
	now := time.Now()
	objects := map[schema.GroupResource][]runtime.Object{
		corev1.Resource("pods"):                  {pod("100m", corev1.PodRunning, nil), pod("200m", corev1.PodSucceeded, nil), pod("300m", corev1.PodPending, ptr.To[int64](5))},
		corev1.Resource("configmaps"):            {&metav1.PartialObjectMetadata{}, &metav1.PartialObjectMetadata{}},
		{Group: "apps", Resource: "deployments"}: nil,
	}
	tests := []struct {
		name  string
		quota corev1.ResourceQuota
		used  corev1.ResourceList
		dirty bool
	}{
		{name: "new quota", quota: corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: rl("pods", "10", "requests.cpu", "1", "count/pods", "10", "configmaps", "5", "count/deployments.apps", "1", "secrets", "1")}},
			used: rl("pods", "2", "requests.cpu", "400m", "count/pods", "3", "configmaps", "2", "count/deployments.apps", "0", "secrets", "0"), dirty: true},
		{name: "terminating scope", quota: corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: rl("pods", "10"), Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}}},
			used: rl("pods", "1"), dirty: true},
		{name: "up to date", quota: corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: rl("configmaps", "5")}, Status: corev1.ResourceQuotaStatus{Hard: rl("configmaps", "5"), Used: rl("configmaps", "2")}},
			used: rl("configmaps", "2")},
		{name: "used of a removed hard resource goes", quota: corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: rl("configmaps", "5")}, Status: corev1.ResourceQuotaStatus{Hard: rl("configmaps", "5", "pods", "1"), Used: rl("configmaps", "2", "pods", "1")}},
			used: rl("configmaps", "2"), dirty: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := map[schema.GroupResource][]runtime.Object{}
			for _, gr := range resourcequota.Resources(tt.quota.Spec.Hard) {
				in[gr] = objects[gr]
			}
			status, dirty, err := resourcequota.Status(&tt.quota, in, now)
			if err != nil {
				t.Fatal(err)
			}
			if !quota.Equals(status.Hard, tt.quota.Spec.Hard) {
				t.Errorf("hard %s, want spec.hard", quota.PrettyPrint(status.Hard))
			}
			if !quota.Equals(status.Used, tt.used) || dirty != tt.dirty {
				t.Errorf("used %s dirty %v, want %s %v", quota.PrettyPrint(status.Used), dirty, quota.PrettyPrint(tt.used), tt.dirty)
			}
		})
	}
}

// TestPodChangedOnlyForWhatQuotaSees: a pod's status update that keeps
// it charged is no reason to recount; finishing is.
func TestPodChangedOnlyForWhatQuotaSees(t *testing.T) {
	now := time.Now()
	running := pod("100m", corev1.PodRunning, nil)
	ready := running.DeepCopy()
	ready.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if resourcequota.PodChanged(running, ready, now) {
		t.Error("a condition change counted as a usage change")
	}
	if !resourcequota.PodChanged(running, pod("100m", corev1.PodFailed, nil), now) {
		t.Error("a failed pod's usage change missed")
	}
}
