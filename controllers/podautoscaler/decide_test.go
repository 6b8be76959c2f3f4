package podautoscaler

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/utils/ptr"
)

// TestProposedReplicas checks upstream's ceil(ratio * pods) and its
// tolerance.
func TestProposedReplicas(t *testing.T) {
	tests := []struct {
		name    string
		current int32
		usage   Usage
		want    int32
	}{
		{"double usage doubles", 3, Usage{Ratio: 2, ReadyPods: 3}, 6},
		{"rounds up", 3, Usage{Ratio: 1.5, ReadyPods: 3}, 5},
		{"within tolerance above", 4, Usage{Ratio: 1.1, ReadyPods: 4}, 4},
		{"within tolerance below", 4, Usage{Ratio: 0.9, ReadyPods: 4}, 4},
		{"just past tolerance", 10, Usage{Ratio: 1.11, ReadyPods: 10}, 12},
		{"half usage halves", 6, Usage{Ratio: 0.5, ReadyPods: 6}, 3},
		{"idle goes to zero (min applies later)", 6, Usage{Ratio: 0, ReadyPods: 6}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ProposedReplicas(tc.current, tc.usage, Tolerance); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

// TestDecide checks the stabilization windows, the rate policies, the
// min/max clamp and the condition reasons, as upstream's
// normalizeDesiredReplicasWithBehaviors decides them.
func TestDecide(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ago := func(s int) time.Time { return now.Add(-time.Duration(s) * time.Second) }
	pods := func(v, period int32) autoscalingv2.HPAScalingPolicy {
		return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: v, PeriodSeconds: period}
	}
	tests := []struct {
		name                   string
		in                     Input
		want                   int32
		stabilized, limitedWhy string
	}{
		{"scale up within the default rate", Input{CurrentReplicas: 2, Proposed: 5, MinReplicas: 1, MaxReplicas: 10},
			5, "ReadyForNewScale", "DesiredWithinRange"},
		{"scale up capped by max", Input{CurrentReplicas: 2, Proposed: 20, MinReplicas: 1, MaxReplicas: 5},
			5, "ReadyForNewScale", "TooManyReplicas"},
		{"default scale up: the larger of +4 pods and +100% per 15 s", Input{CurrentReplicas: 3, Proposed: 50, MinReplicas: 1, MaxReplicas: 100},
			7, "ReadyForNewScale", "ScaleUpLimit"},
		{"Min picks the policy allowing the least change", Input{CurrentReplicas: 3, Proposed: 50, MinReplicas: 1, MaxReplicas: 100,
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{SelectPolicy: ptr.To(autoscalingv2.MinChangePolicySelect)}}},
			6, "ReadyForNewScale", "ScaleUpLimit"},
		{"scale-up events of the period count against the rate", Input{CurrentReplicas: 7, Proposed: 50, MinReplicas: 1, MaxReplicas: 100,
			Events: []ScaleEvent{{At: ago(5), Change: 4}}}, 7, "ReadyForNewScale", "ScaleUpLimit"},
		{"scale down held by the default 300 s window", Input{CurrentReplicas: 6, Proposed: 2, MinReplicas: 1, MaxReplicas: 10,
			Recommendations: []Recommendation{{At: ago(100), Replicas: 6}}}, 6, "ScaleDownStabilized", "DesiredWithinRange"},
		{"scale down once the window has passed", Input{CurrentReplicas: 6, Proposed: 2, MinReplicas: 1, MaxReplicas: 10,
			Recommendations: []Recommendation{{At: ago(301), Replicas: 6}}}, 2, "ReadyForNewScale", "DesiredWithinRange"},
		{"scale down stops at min", Input{CurrentReplicas: 6, Proposed: 0, MinReplicas: 2, MaxReplicas: 10},
			2, "ReadyForNewScale", "TooFewReplicas"},
		{"scale down limited by a pods policy", Input{CurrentReplicas: 6, Proposed: 1, MinReplicas: 1, MaxReplicas: 10,
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
				StabilizationWindowSeconds: ptr.To[int32](0), Policies: []autoscalingv2.HPAScalingPolicy{pods(1, 60)}}}},
			5, "ReadyForNewScale", "ScaleDownLimit"},
		{"scale up stabilized by an up window", Input{CurrentReplicas: 2, Proposed: 6, MinReplicas: 1, MaxReplicas: 10,
			Behavior:        &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](60)}},
			Recommendations: []Recommendation{{At: ago(30), Replicas: 3}}}, 3, "ScaleUpStabilized", "DesiredWithinRange"},
		{"disabled scale down keeps the replicas", Input{CurrentReplicas: 6, Proposed: 2, MinReplicas: 1, MaxReplicas: 10,
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
				StabilizationWindowSeconds: ptr.To[int32](0), SelectPolicy: ptr.To(autoscalingv2.DisabledPolicySelect)}}},
			6, "ReadyForNewScale", "ScaleDownLimit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Now = now
			d := Decide(tc.in)
			if d.Replicas != tc.want || d.StabilizedReason != tc.stabilized || d.LimitedReason != tc.limitedWhy {
				t.Errorf("got %d (%s, %s), want %d (%s, %s)", d.Replicas, d.StabilizedReason, d.LimitedReason, tc.want, tc.stabilized, tc.limitedWhy)
			}
			if len(d.Recommendations) == 0 || d.Recommendations[0] != (Recommendation{At: now, Replicas: tc.in.Proposed}) {
				t.Errorf("recommendations %v do not start with this one", d.Recommendations)
			}
		})
	}
}

// TestDecidePrunesOldRecommendations checks that history older than both
// windows is dropped.
func TestDecidePrunesOldRecommendations(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	d := Decide(Input{Now: now, CurrentReplicas: 3, Proposed: 3, MinReplicas: 1, MaxReplicas: 5, Recommendations: []Recommendation{
		{At: now.Add(-400 * time.Second), Replicas: 5}, {At: now.Add(-10 * time.Second), Replicas: 4}}})
	if len(d.Recommendations) != 2 || d.Recommendations[1].Replicas != 4 {
		t.Errorf("recommendations %v, want this one and the one of 10 s ago", d.Recommendations)
	}
}
