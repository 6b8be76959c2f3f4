package quota_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/apis/core/quota"
)

func list(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func quotaOf(name string, hard, used corev1.ResourceList, scopes ...corev1.ResourceQuotaScope) corev1.ResourceQuota {
	return corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard, Scopes: scopes},
		Status:     corev1.ResourceQuotaStatus{Hard: hard, Used: used},
	}
}

func podWith(req, lim corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "c", Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}},
	}}}
}

// TestCheckRequestAsUpstream: what a create charges, upstream's refusals
// and their messages, scopes, and updates charged by their difference.
func TestCheckRequestAsUpstream(t *testing.T) {
	now := time.Now()
	small := podWith(list("cpu", "100m", "memory", "100Mi"), list("cpu", "200m", "memory", "200Mi"))
	tests := []struct {
		name   string
		quotas []corev1.ResourceQuota
		gr     string
		req    quota.Request
		used   []corev1.ResourceList // per quota after the charge
		err    string
	}{
		{name: "pod charged", gr: "pods",
			quotas: []corev1.ResourceQuota{quotaOf("q", list("pods", "2", "requests.cpu", "1", "limits.memory", "1Gi"), list("pods", "1", "requests.cpu", "100m", "limits.memory", "0"))},
			req:    quota.Request{Create: true, Object: small},
			used:   []corev1.ResourceList{list("pods", "2", "requests.cpu", "200m", "limits.memory", "200Mi")}},
		{name: "pods exceeded", gr: "pods",
			quotas: []corev1.ResourceQuota{quotaOf("q", list("pods", "1"), list("pods", "1"))},
			req:    quota.Request{Create: true, Object: small},
			err:    "exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1"},
		{name: "cpu exceeded", gr: "pods",
			quotas: []corev1.ResourceQuota{quotaOf("q", list("pods", "5", "requests.cpu", "150m"), list("pods", "0", "requests.cpu", "100m"))},
			req:    quota.Request{Create: true, Object: small},
			err:    "exceeded quota: q, requested: requests.cpu=100m, used: requests.cpu=100m, limited: requests.cpu=150m"},
		{name: "must specify", gr: "pods",
			quotas: []corev1.ResourceQuota{quotaOf("q", list("requests.memory", "1Gi", "limits.cpu", "1"), list("requests.memory", "0", "limits.cpu", "0"))},
			req:    quota.Request{Create: true, Object: podWith(nil, nil)},
			err:    "failed quota: q: must specify limits.cpu for: c; requests.memory for: c"},
		{name: "status unknown", gr: "pods",
			quotas: []corev1.ResourceQuota{quotaOf("q", list("pods", "1"), nil)},
			req:    quota.Request{Create: true, Object: small},
			err:    "status unknown for quota: q, resources: pods"},
		{name: "best effort scope leaves a burstable pod out", gr: "pods",
			quotas: []corev1.ResourceQuota{quotaOf("q", list("pods", "1"), list("pods", "1"), corev1.ResourceQuotaScopeBestEffort)},
			req:    quota.Request{Create: true, Object: small},
			used:   []corev1.ResourceList{list("pods", "1")}},
		{name: "terminating scope", gr: "pods",
			quotas: []corev1.ResourceQuota{
				quotaOf("t", list("pods", "1"), list("pods", "0"), corev1.ResourceQuotaScopeTerminating),
				quotaOf("n", list("pods", "1"), list("pods", "0"), corev1.ResourceQuotaScopeNotTerminating),
			},
			req:  quota.Request{Create: true, Object: func() *corev1.Pod { p := podWith(nil, nil); p.Spec.ActiveDeadlineSeconds = ptr.To[int64](10); return p }()},
			used: []corev1.ResourceList{list("pods", "1"), list("pods", "0")}},
		{name: "object count", gr: "configmaps",
			quotas: []corev1.ResourceQuota{quotaOf("q", list("configmaps", "2", "count/configmaps", "2", "secrets", "1"), list("configmaps", "1", "count/configmaps", "1", "secrets", "0"))},
			req:    quota.Request{Create: true, Object: &corev1.ConfigMap{}},
			used:   []corev1.ResourceList{list("configmaps", "2", "count/configmaps", "2", "secrets", "0")}},
		{name: "object count of a group", gr: "replicasets.apps",
			quotas: []corev1.ResourceQuota{quotaOf("q", list("count/replicasets.apps", "1"), list("count/replicasets.apps", "1"))},
			req:    quota.Request{Create: true, Object: &corev1.ConfigMap{}},
			err:    "exceeded quota: q, requested: count/replicasets.apps=1, used: count/replicasets.apps=1, limited: count/replicasets.apps=1"},
		{name: "node port service", gr: "services",
			quotas: []corev1.ResourceQuota{quotaOf("q", list("services", "5", "services.nodeports", "1"), list("services", "0", "services.nodeports", "0"))},
			req:    quota.Request{Create: true, Object: &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 1}, {Port: 2}}}}},
			err:    "exceeded quota: q, requested: services.nodeports=2, used: services.nodeports=0, limited: services.nodeports=1"},
		{name: "claim update charges the growth", gr: "persistentvolumeclaims",
			quotas: []corev1.ResourceQuota{quotaOf("q", list("requests.storage", "10Gi", "persistentvolumeclaims", "3"), list("requests.storage", "1Gi", "persistentvolumeclaims", "1"))},
			req: quota.Request{Object: &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: list("storage", "3Gi")}}},
				Old: &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "5"}, Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: list("storage", "1Gi")}}}},
			used: []corev1.ResourceList{list("requests.storage", "3Gi", "persistentvolumeclaims", "1")}},
		{name: "pod update that changes nothing is not looked at", gr: "pods",
			quotas: []corev1.ResourceQuota{quotaOf("q", list("pods", "1"), list("pods", "1"))},
			req:    quota.Request{Object: small, Old: small},
			used:   []corev1.ResourceList{list("pods", "1")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Namespace = "ns"
			out, err := quota.CheckRequest(tt.quotas, quota.For(parseGR(tt.gr)), tt.req, now)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.err {
				t.Fatalf("error %q, want %q", got, tt.err)
			}
			if err != nil {
				return
			}
			for i, want := range tt.used {
				if !quota.Equals(out[i].Status.Used, want) {
					t.Errorf("quota %s used %v, want %v", out[i].Name, quota.PrettyPrint(out[i].Status.Used), quota.PrettyPrint(want))
				}
			}
		})
	}
}
