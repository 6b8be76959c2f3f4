package podautoscaler_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/controllers/podautoscaler"
	"github.com/kite-project/kite/controllers/scaleclient"
)

// cpuSource is an in-process metrics source: the CPU utilization it is
// set to, over as many ready pods as the target has replicas.
type cpuSource struct {
	mu          sync.Mutex
	utilization int32
	client      kubernetes.Interface
	// measured is when each utilization was last reported.
	measured map[int32]time.Time
}

func (s *cpuSource) set(u int32) { s.mu.Lock(); s.utilization = u; s.mu.Unlock() }

func (s *cpuSource) lastMeasured(u int32) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.measured[u]
}

func (s *cpuSource) Measure(ctx context.Context, h *autoscalingv2.HorizontalPodAutoscaler, _ autoscalingv2.MetricSpec, _ string) (autoscalingv2.MetricValueStatus, int32, error) {
	d, err := s.client.AppsV1().Deployments(h.Namespace).Get(ctx, h.Spec.ScaleTargetRef.Name, metav1.GetOptions{})
	if err != nil {
		return autoscalingv2.MetricValueStatus{}, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.measured == nil {
		s.measured = map[int32]time.Time{}
	}
	s.measured[s.utilization] = time.Now()
	return autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To(s.utilization)}, *d.Spec.Replicas, nil
}

// TestAutoscalerScalesADeploymentUpAndDown runs the controller against a
// real server: a Deployment's scale follows the measured CPU up, then
// back down once the load is gone, and the autoscaler's status says so.
func TestAutoscalerScalesADeploymentUpAndDown(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	source := &cpuSource{utilization: 100, client: cs}
	ns := start(t, cs, source)
	ctx := t.Context()
	var err error
	_, err = cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MaxReplicas:    6,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)}}}},
			// no scale-down window, so that the test need not wait 300 s
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0)}},
		}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	waitReplicas := func(want int32) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
			d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			return err == nil && *d.Spec.Replicas == want, err
		})
		if err != nil {
			t.Fatalf("deployment replicas never became %d: %v", want, err)
		}
	}
	// 100% against a 50% target: 2 replicas become 4, then 6 (max).
	waitReplicas(6)
	source.set(10)
	waitReplicas(1) // 10% of 50%: down to minReplicas (defaulted 1)

	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		h, err := cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		active := false
		for _, c := range h.Status.Conditions {
			if c.Type == autoscalingv2.ScalingActive && c.Status == corev1.ConditionTrue && c.Reason == "ValidMetricFound" {
				active = true
			}
		}
		return active && h.Status.DesiredReplicas == 1 && h.Status.LastScaleTime != nil && len(h.Status.CurrentMetrics) == 1 &&
			*h.Status.CurrentMetrics[0].Resource.Current.AverageUtilization == 10, nil
	})
	if err != nil {
		t.Fatalf("status never showed the scale down: %v", err)
	}
}

// TestAutoscalerWithoutMetricsReportsScalingInactive checks that with no
// metrics source (Kite serves no metrics API yet) the target is left alone
// and the status says why, as upstream's FailedGetResourceMetric.
func TestAutoscalerWithoutMetricsReportsScalingInactive(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ns := start(t, cs, nil)
	ctx := t.Context()
	var err error
	_, err = cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}, MaxReplicas: 6}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		h, err := cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range h.Status.Conditions {
			if c.Type == autoscalingv2.ScalingActive {
				return c.Status == corev1.ConditionFalse && c.Reason == "FailedGetResourceMetric", nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("ScalingActive never became False/FailedGetResourceMetric: %v", err)
	}
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 2 {
		t.Errorf("deployment replicas %v (%v), want 2 untouched", d.Spec.Replicas, err)
	}
}

// start runs a controller with metrics (nil: none) and makes a namespace
// with a Deployment "web" of 2 replicas for it to scale.
func start(t *testing.T, cs kubernetes.Interface, metrics podautoscaler.Metrics) string {
	t.Helper()
	scales, err := scaleclient.New(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	opts := podautoscaler.Options{Client: cs, Scales: scales, SyncPeriod: 50 * time.Millisecond}
	if metrics != nil {
		opts.Metrics = metrics
	}
	c, err := podautoscaler.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { c.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "hpa-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	labels := map[string]string{"app": "web"}
	_, err = cs.AppsV1().Deployments(ns.Name).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// TestAutoscalerHoldsAScaleDownForItsStabilizationWindow: once the load
// stops, the target keeps its replicas for the scale-down stabilization
// window (behavior.scaleDown.stabilizationWindowSeconds, here 2 s for
// upstream's default 300 s), AbleToScale saying ScaleDownStabilized
// meanwhile, and only then goes down, to minReplicas in the end.
func TestAutoscalerHoldsAScaleDownForItsStabilizationWindow(t *testing.T) {
	const window = 2 * time.Second
	const period = 50 * time.Millisecond
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	source := &cpuSource{utilization: 100, client: cs}
	ns := start(t, cs, source)
	ctx := t.Context()
	_, err := cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MaxReplicas:    4,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)}}}},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(int32(window / time.Second))}},
		}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	replicas := func() int32 {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return *d.Spec.Replicas
	}
	ableToScale := func() string {
		h, err := cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range h.Status.Conditions {
			if c.Type == autoscalingv2.AbleToScale {
				return c.Reason
			}
		}
		return ""
	}
	for deadline := time.Now().Add(20 * time.Second); replicas() != 4; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never scaled up to 4 under load: %d", replicas())
		}
	}

	// The load stops: 10% of a 50% target asks for ceil(0.2*4) = 1.
	source.set(10)
	var reasons []string
	for replicas() == 4 {
		if r := ableToScale(); !slices.Contains(reasons, r) {
			reasons = append(reasons, r)
		}
		if time.Since(source.lastMeasured(100)) > window+20*time.Second {
			t.Fatalf("still 4 replicas %s after the load was last measured (window %s)", time.Since(source.lastMeasured(100)), window)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The window runs from the last recommendation made under load: the
	// controller's clock read just before that last measurement.
	held := time.Since(source.lastMeasured(100))
	if held < window-period {
		t.Errorf("scaled down %s after the load was last measured, within the %s stabilization window", held, window)
	}
	if !slices.Contains(reasons, "ScaleDownStabilized") {
		t.Errorf("AbleToScale reasons while held %v, want ScaleDownStabilized", reasons)
	}
	if got := replicas(); got != 1 {
		t.Errorf("after the window, %d replicas, want 1 (minReplicas)", got)
	}
	t.Logf("held 4 replicas for %s after the load was last measured (window %s); AbleToScale reasons meanwhile %v", held.Round(time.Millisecond), window, reasons)
}
