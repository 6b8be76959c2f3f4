package podautoscaler

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

func TestResourceUsageOverReadyPodsWithMetrics(t *testing.T) {
	q := resource.MustParse
	pod := func(name string, ready bool, requests ...string) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
		for i, r := range requests {
			c := corev1.Container{Name: []string{"app", "sidecar"}[i]}
			if r != "" {
				c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: q(r)}
			}
			p.Spec.Containers = append(p.Spec.Containers, c)
		}
		return p
	}
	usage := func(name string, cpu ...string) metricsv1beta1.PodMetrics {
		m := metricsv1beta1.PodMetrics{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for i, c := range cpu {
			m.Containers = append(m.Containers, metricsv1beta1.ContainerMetrics{Name: []string{"app", "sidecar"}[i], Usage: corev1.ResourceList{corev1.ResourceCPU: q(c)}})
		}
		return m
	}
	for _, tc := range []struct {
		name      string
		pods      []corev1.Pod
		metrics   []metricsv1beta1.PodMetrics
		container string
		wantUtil  int32
		wantAvg   string
		wantReady int32
		wantErr   string
	}{
		{name: "usage against requests", pods: []corev1.Pod{pod("a", true, "100m"), pod("b", true, "100m")},
			metrics: []metricsv1beta1.PodMetrics{usage("a", "150m"), usage("b", "50m")}, wantUtil: 100, wantAvg: "100m", wantReady: 2},
		{name: "unready pods and pods without metrics do not count", pods: []corev1.Pod{pod("a", true, "100m"), pod("b", false, "100m"), pod("c", true, "100m")},
			metrics: []metricsv1beta1.PodMetrics{usage("a", "200m"), usage("b", "0")}, wantUtil: 200, wantAvg: "200m", wantReady: 1},
		{name: "all containers of a pod", pods: []corev1.Pod{pod("a", true, "100m", "100m")},
			metrics: []metricsv1beta1.PodMetrics{usage("a", "100m", "300m")}, wantUtil: 200, wantAvg: "400m", wantReady: 1},
		{name: "one container of a ContainerResource metric", pods: []corev1.Pod{pod("a", true, "100m", "100m")}, container: "sidecar",
			metrics: []metricsv1beta1.PodMetrics{usage("a", "100m", "300m")}, wantUtil: 300, wantAvg: "300m", wantReady: 1},
		{name: "a container without a request", pods: []corev1.Pod{pod("a", true, "")},
			metrics: []metricsv1beta1.PodMetrics{usage("a", "100m")}, wantErr: "missing request for cpu in container app of Pod a"},
		{name: "no ready pod with metrics", pods: []corev1.Pod{pod("a", false, "100m")},
			metrics: []metricsv1beta1.PodMetrics{usage("a", "100m")}, wantErr: "did not receive metrics"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, ready, err := resourceUsage(tc.pods, tc.metrics, corev1.ResourceCPU, tc.container)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if *v.AverageUtilization != tc.wantUtil || v.AverageValue.String() != tc.wantAvg || ready != tc.wantReady {
				t.Errorf("utilization %d average %s over %d pods, want %d %s %d", *v.AverageUtilization, v.AverageValue, ready, tc.wantUtil, tc.wantAvg, tc.wantReady)
			}
		})
	}
}
