package podautoscaler

import (
	"context"
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"
)

// ResourceMetrics measures Resource and ContainerResource metrics from
// the resource metrics API (metrics.k8s.io: Kite's own, or a
// metrics-server's), as upstream's replica calculator does: over the
// ready pods of the target's selector that have metrics, usage against
// the containers' requests. Pods, Object and External metrics need the
// custom and external metrics APIs, which Kite does not serve.
type ResourceMetrics struct {
	Client  kubernetes.Interface
	Metrics metricsclient.MetricsV1beta1Interface
}

// Measure implements Metrics.
func (m ResourceMetrics) Measure(ctx context.Context, h *autoscalingv2.HorizontalPodAutoscaler, metric autoscalingv2.MetricSpec, selector string) (autoscalingv2.MetricValueStatus, int32, error) {
	var name corev1.ResourceName
	container := ""
	switch {
	case metric.Resource != nil:
		name = metric.Resource.Name
	case metric.ContainerResource != nil:
		name, container = metric.ContainerResource.Name, metric.ContainerResource.Container
	default:
		return autoscalingv2.MetricValueStatus{}, 0, fmt.Errorf("%s metrics need the custom or external metrics API, which is not served", metric.Type)
	}
	pods, err := m.Client.CoreV1().Pods(h.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return autoscalingv2.MetricValueStatus{}, 0, fmt.Errorf("unable to get pods while calculating replica count: %w", err)
	}
	if len(pods.Items) == 0 {
		return autoscalingv2.MetricValueStatus{}, 0, fmt.Errorf("no pods returned by selector while calculating replica count")
	}
	list, err := m.Metrics.PodMetricses(h.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return autoscalingv2.MetricValueStatus{}, 0, fmt.Errorf("unable to get metrics for resource %s: unable to fetch metrics from resource metrics API: %w", name, err)
	}
	if len(list.Items) == 0 {
		return autoscalingv2.MetricValueStatus{}, 0, fmt.Errorf("unable to get metrics for resource %s: no metrics returned from resource metrics API", name)
	}
	return resourceUsage(pods.Items, list.Items, name, container)
}

// resourceUsage is the decision of Measure: the ready, running pods that
// have metrics count; a pod whose container has no request for the
// resource is an error, as upstream's calculator says.
func resourceUsage(pods []corev1.Pod, metrics []metricsv1beta1.PodMetrics, name corev1.ResourceName, container string) (autoscalingv2.MetricValueStatus, int32, error) {
	usageOf := map[string]*resource.Quantity{}
	for _, pm := range metrics {
		var sum resource.Quantity
		found := false
		for _, c := range pm.Containers {
			if container != "" && c.Name != container {
				continue
			}
			if q, ok := c.Usage[name]; ok {
				sum.Add(q)
				found = true
			}
		}
		if found {
			usageOf[pm.Name] = &sum
		}
	}
	var usage, requests int64 // milli-units
	var counted int32
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded || !podReady(&p) {
			continue
		}
		u, ok := usageOf[p.Name]
		if !ok {
			continue
		}
		var req int64
		for _, c := range p.Spec.Containers {
			if container != "" && c.Name != container {
				continue
			}
			q, ok := c.Resources.Requests[name]
			if !ok {
				return autoscalingv2.MetricValueStatus{}, 0, fmt.Errorf("missing request for %s in container %s of Pod %s", name, c.Name, p.Name)
			}
			req += q.MilliValue()
		}
		usage += u.MilliValue()
		requests += req
		counted++
	}
	if counted == 0 {
		return autoscalingv2.MetricValueStatus{}, 0, fmt.Errorf("did not receive metrics for targeted pods (pods might be unready)")
	}
	avg := resource.NewMilliQuantity(usage/int64(counted), resource.DecimalSI)
	v := autoscalingv2.MetricValueStatus{AverageValue: avg}
	if requests > 0 {
		util := int32(usage * 100 / requests)
		v.AverageUtilization = &util
	}
	return v, counted, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
