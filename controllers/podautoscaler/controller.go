package podautoscaler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/scaleclient"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

// Metrics measures one metric of an autoscaler's target: the current
// value (utilization in percent, or an average or total value, as the
// metric's target type asks) and the ready pods it was measured over.
// ResourceMetrics reads metrics.k8s.io; tests supply their own.
type Metrics interface {
	Measure(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, metric autoscalingv2.MetricSpec, selector string) (autoscalingv2.MetricValueStatus, int32, error)
}

// NoMetrics is the Metrics of a cluster without a metrics API: every
// measurement fails, so autoscalers report ScalingActive False.
type NoMetrics struct{}

// Measure fails.
func (NoMetrics) Measure(context.Context, *autoscalingv2.HorizontalPodAutoscaler, autoscalingv2.MetricSpec, string) (autoscalingv2.MetricValueStatus, int32, error) {
	return autoscalingv2.MetricValueStatus{}, 0, errors.New("no metrics API is served (metrics.k8s.io)")
}

// Options configure a Controller.
type Options struct {
	Client  kubernetes.Interface // required
	Scales  *scaleclient.Client  // required
	Metrics Metrics              // nil means NoMetrics
	// SyncPeriod is upstream's --horizontal-pod-autoscaler-sync-period;
	// 0 means 15 s.
	SyncPeriod time.Duration
	Informers  *informer.Factory
	Now        func() time.Time
}

// Controller scales the targets of HorizontalPodAutoscalers.
type Controller struct {
	opts  Options
	loop  *controller.Loop[string]
	queue *workqueue.Queue[string]
	hpas  *informer.Informer[*autoscalingv2.HorizontalPodAutoscaler]

	mu      sync.Mutex
	history map[string]*history // by namespace/name
}

type history struct {
	recommendations []Recommendation
	events          []ScaleEvent
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil || opts.Scales == nil {
		return nil, fmt.Errorf("horizontal-pod-autoscaler: Client and Scales are required")
	}
	if opts.Metrics == nil {
		opts.Metrics = NoMetrics{}
	}
	if opts.SyncPeriod == 0 {
		opts.SyncPeriod = 15 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Controller{opts: opts, queue: workqueue.New[string](workqueue.Options{}), history: map[string]*history{}}
	queue := func(h *autoscalingv2.HorizontalPodAutoscaler) { c.queue.Add(controller.Key(h)) }
	var err error
	c.hpas, err = informer.For(opts.Informers, informer.Options[*autoscalingv2.HorizontalPodAutoscaler]{
		Name: "horizontalpodautoscalers", Shape: informer.Shape{Resource: "horizontalpodautoscalers.autoscaling"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.AutoscalingV2().HorizontalPodAutoscalers(""), nil),
		Handlers: informer.Handlers[*autoscalingv2.HorizontalPodAutoscaler]{
			OnAdd: queue,
			// Status writes are the controller's own: only spec changes
			// call for a look before the next period.
			OnUpdate: func(old, h *autoscalingv2.HorizontalPodAutoscaler) {
				if old.Generation != h.Generation {
					queue(h)
				}
			},
			OnDelete: queue,
		},
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[string]{Name: "horizontal-pod-autoscaler", Queue: c.queue, Informers: []controller.Informer{c.hpas}, Sync: c.sync}
	return c, nil
}

// Run works until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once the cache is listed and no autoscaler is queued
// (the next periods' looks are timers, not queued work).
func (c *Controller) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

// sync is upstream's reconcileAutoscaler for one autoscaler, then a look
// again after the sync period.
func (c *Controller) sync(ctx context.Context, key string) error {
	h, ok := c.hpas.Store().Get(key)
	if !ok {
		c.mu.Lock()
		delete(c.history, key)
		c.mu.Unlock()
		return nil
	}
	defer c.queue.AddAfter(key, c.opts.SyncPeriod)
	h = h.DeepCopy()
	// A failed reconcile is in the status' conditions and is tried again
	// after the sync period, as upstream's fixed-interval rate limiter
	// does: a missing metric must not retry at the queue's fast backoff.
	if err := c.reconcile(ctx, key, h); err != nil {
		klog.FromContext(ctx).Info("Cannot autoscale", "horizontalpodautoscaler", key, "err", err)
	}
	if _, err := c.opts.Client.AutoscalingV2().HorizontalPodAutoscalers(h.Namespace).UpdateStatus(ctx, h, metav1.UpdateOptions{FieldManager: "kube-controller-manager"}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("status of horizontalpodautoscaler %s: %w", key, err)
	}
	return nil
}

func (c *Controller) reconcile(ctx context.Context, key string, h *autoscalingv2.HorizontalPodAutoscaler) error {
	now := c.opts.Now()
	h.Status.ObservedGeneration = &h.Generation
	ref := h.Spec.ScaleTargetRef
	scale, gr, err := c.opts.Scales.Get(ctx, h.Namespace, ref.APIVersion, ref.Kind, ref.Name)
	if err != nil {
		setCondition(h, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedGetScale", fmt.Sprintf("the HPA controller was unable to get the target's current scale: %v", err), now)
		return fmt.Errorf("scale of %s %s/%s: %w", ref.Kind, h.Namespace, ref.Name, err)
	}
	setCondition(h, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale", now)
	current := scale.Spec.Replicas
	h.Status.CurrentReplicas = scale.Status.Replicas
	minReplicas := int32(1)
	if h.Spec.MinReplicas != nil {
		minReplicas = *h.Spec.MinReplicas
	}

	var desired int32
	switch {
	case current == 0 && minReplicas != 0:
		// autoscaling is off while the target is scaled to zero
		desired = 0
		setCondition(h, autoscalingv2.ScalingActive, corev1.ConditionFalse, "ScalingDisabled", "scaling is disabled since the replica count of the target is zero", now)
	case current > h.Spec.MaxReplicas:
		desired = h.Spec.MaxReplicas
		setCondition(h, autoscalingv2.ScalingLimited, corev1.ConditionTrue, "TooManyReplicas", "the desired replica count is more than the maximum replica count", now)
	case current < minReplicas:
		desired = minReplicas
		setCondition(h, autoscalingv2.ScalingLimited, corev1.ConditionTrue, "TooFewReplicas", "the desired replica count is less than the minimum replica count", now)
	default:
		proposed, statuses, err := c.measure(ctx, h, current, scale.Status.Selector)
		if err != nil {
			setCondition(h, autoscalingv2.ScalingActive, corev1.ConditionFalse, "FailedGetResourceMetric", fmt.Sprintf("the HPA was unable to compute the replica count: %v", err), now)
			return fmt.Errorf("metrics of horizontalpodautoscaler %s: %w", key, err)
		}
		h.Status.CurrentMetrics = statuses
		setCondition(h, autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound", "the HPA was able to successfully calculate a replica count from the metrics", now)
		c.mu.Lock()
		past := c.history[key]
		if past == nil {
			past = &history{}
			c.history[key] = past
		}
		d := Decide(Input{Now: now, CurrentReplicas: current, Proposed: proposed, MinReplicas: minReplicas, MaxReplicas: h.Spec.MaxReplicas,
			Behavior: h.Spec.Behavior, Recommendations: past.recommendations, Events: past.events})
		past.recommendations = d.Recommendations
		c.mu.Unlock()
		desired = d.Replicas
		if d.StabilizedReason != "ReadyForNewScale" {
			setCondition(h, autoscalingv2.AbleToScale, corev1.ConditionTrue, d.StabilizedReason, d.StabilizedMessage, now)
		} else {
			setCondition(h, autoscalingv2.AbleToScale, corev1.ConditionTrue, "ReadyForNewScale", "recommended size matches current size", now)
		}
		status := corev1.ConditionFalse
		if d.Limited() {
			status = corev1.ConditionTrue
		}
		setCondition(h, autoscalingv2.ScalingLimited, status, d.LimitedReason, d.LimitedMessage, now)
	}
	h.Status.DesiredReplicas = desired
	if desired == current {
		return nil
	}
	scale.Spec.Replicas = desired
	if _, err := c.opts.Scales.Update(ctx, gr, scale, metav1.UpdateOptions{FieldManager: "kube-controller-manager"}); err != nil {
		setCondition(h, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedUpdateScale", fmt.Sprintf("the HPA controller was unable to update the target scale: %v", err), now)
		return fmt.Errorf("rescale %s %s/%s to %d: %w", ref.Kind, h.Namespace, ref.Name, desired, err)
	}
	setCondition(h, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale", fmt.Sprintf("the HPA controller was able to update the target scale to %d", desired), now)
	t := metav1.NewTime(now)
	h.Status.LastScaleTime = &t
	c.mu.Lock()
	if past := c.history[key]; past != nil {
		past.events = append(pruneEvents(past.events, now), ScaleEvent{At: now, Change: desired - current})
	}
	c.mu.Unlock()
	return nil
}

// pruneEvents drops scale events older than the longest policy period
// allowed (MaxPeriodSeconds, 30 minutes).
func pruneEvents(events []ScaleEvent, now time.Time) []ScaleEvent {
	var kept []ScaleEvent
	for _, e := range events {
		if now.Sub(e.At) < 30*time.Minute {
			kept = append(kept, e)
		}
	}
	return kept
}

// measure is upstream's computeReplicasForMetrics: every metric's
// proposal, the largest wins.
func (c *Controller) measure(ctx context.Context, h *autoscalingv2.HorizontalPodAutoscaler, current int32, selector string) (int32, []autoscalingv2.MetricStatus, error) {
	var proposed int32
	var statuses []autoscalingv2.MetricStatus
	for i, m := range h.Spec.Metrics {
		value, ready, err := c.opts.Metrics.Measure(ctx, h, m, selector)
		if err != nil {
			return 0, nil, fmt.Errorf("metric %d (%s): %w", i, m.Type, err)
		}
		target, ok := metricTarget(m)
		if !ok {
			return 0, nil, fmt.Errorf("metric %d: type %q has no source", i, m.Type)
		}
		ratio, err := usageRatio(value, target)
		if err != nil {
			return 0, nil, fmt.Errorf("metric %d (%s): %w", i, m.Type, err)
		}
		proposed = max(proposed, ProposedReplicas(current, Usage{Ratio: ratio, ReadyPods: ready}, Tolerance))
		statuses = append(statuses, metricStatus(m, value))
	}
	return proposed, statuses, nil
}

func metricTarget(m autoscalingv2.MetricSpec) (autoscalingv2.MetricTarget, bool) {
	switch {
	case m.Resource != nil:
		return m.Resource.Target, true
	case m.ContainerResource != nil:
		return m.ContainerResource.Target, true
	case m.Pods != nil:
		return m.Pods.Target, true
	case m.Object != nil:
		return m.Object.Target, true
	case m.External != nil:
		return m.External.Target, true
	}
	return autoscalingv2.MetricTarget{}, false
}

// usageRatio is current/target in the target's terms.
func usageRatio(v autoscalingv2.MetricValueStatus, t autoscalingv2.MetricTarget) (float64, error) {
	switch {
	case t.AverageUtilization != nil && v.AverageUtilization != nil:
		return float64(*v.AverageUtilization) / float64(*t.AverageUtilization), nil
	case t.AverageValue != nil && v.AverageValue != nil:
		return v.AverageValue.AsApproximateFloat64() / t.AverageValue.AsApproximateFloat64(), nil
	case t.Value != nil && v.Value != nil:
		return v.Value.AsApproximateFloat64() / t.Value.AsApproximateFloat64(), nil
	}
	return 0, fmt.Errorf("the measurement has no value of the target's type %s", t.Type)
}

func metricStatus(m autoscalingv2.MetricSpec, v autoscalingv2.MetricValueStatus) autoscalingv2.MetricStatus {
	s := autoscalingv2.MetricStatus{Type: m.Type}
	switch {
	case m.Resource != nil:
		s.Resource = &autoscalingv2.ResourceMetricStatus{Name: m.Resource.Name, Current: v}
	case m.ContainerResource != nil:
		s.ContainerResource = &autoscalingv2.ContainerResourceMetricStatus{Name: m.ContainerResource.Name, Container: m.ContainerResource.Container, Current: v}
	case m.Pods != nil:
		s.Pods = &autoscalingv2.PodsMetricStatus{Metric: m.Pods.Metric, Current: v}
	case m.Object != nil:
		s.Object = &autoscalingv2.ObjectMetricStatus{Metric: m.Object.Metric, DescribedObject: m.Object.DescribedObject, Current: v}
	case m.External != nil:
		s.External = &autoscalingv2.ExternalMetricStatus{Metric: m.External.Metric, Current: v}
	}
	return s
}

// setCondition is upstream's setCondition: the transition time moves only
// when the status does.
func setCondition(h *autoscalingv2.HorizontalPodAutoscaler, typ autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) {
	for i := range h.Status.Conditions {
		c := &h.Status.Conditions[i]
		if c.Type != typ {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = metav1.NewTime(now)
		}
		c.Status, c.Reason, c.Message = status, reason, message
		return
	}
	h.Status.Conditions = append(h.Status.Conditions, autoscalingv2.HorizontalPodAutoscalerCondition{
		Type: typ, Status: status, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(now)})
}
