// Package podautoscaler holds the HorizontalPodAutoscaler controller's
// decision (upstream's pkg/controller/podautoscaler): from the metrics'
// usage and the scale target's replicas, the replicas to scale to, with
// the tolerance, the min/max clamp, the stabilization windows and the
// behavior's rate policies, and the reason and message of the
// ScalingLimited condition. It is pure: the time, past recommendations
// and scale events are inputs.
package podautoscaler

import (
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	autoscalingdefaults "github.com/kite-project/kite/apis/autoscaling/defaults"
)

// Tolerance is upstream's --horizontal-pod-autoscaler-tolerance: a usage
// within 10% of the target changes nothing.
const Tolerance = 0.1

// DownscaleStabilization is upstream's
// --horizontal-pod-autoscaler-downscale-stabilization: the window of a
// scale-down rule that names none.
const DownscaleStabilization = 300 * time.Second

// Usage is one metric's measurement against its target: Ratio is
// current/target (utilization or average value per pod), over ReadyPods
// pods.
type Usage struct {
	Ratio     float64
	ReadyPods int32
}

// ProposedReplicas is upstream's replica calculation for one metric:
// the current replicas while the usage is within the tolerance, else
// ceil(ratio * ready pods).
func ProposedReplicas(current int32, u Usage, tolerance float64) int32 {
	// upstream's Tolerances.isWithin, in this form so that a ratio of
	// exactly 1+tolerance is within it despite floating point
	if 1-tolerance <= u.Ratio && u.Ratio <= 1+tolerance {
		return current
	}
	return int32(math.Ceil(u.Ratio * float64(u.ReadyPods)))
}

// Recommendation is a desired replica count computed at a time; the
// stabilization windows look back over them.
type Recommendation struct {
	At       time.Time
	Replicas int32
}

// ScaleEvent is a change of the target's replicas the controller made:
// positive up, negative down. The rate policies count them per period.
type ScaleEvent struct {
	At     time.Time
	Change int32
}

// Input is what one decision needs.
type Input struct {
	Now             time.Time
	CurrentReplicas int32
	// Proposed is the largest of the metrics' proposals.
	Proposed    int32
	MinReplicas int32
	MaxReplicas int32
	Behavior    *autoscalingv2.HorizontalPodAutoscalerBehavior
	// Recommendations and Events are this autoscaler's history; the
	// decision returns them pruned and extended.
	Recommendations []Recommendation
	Events          []ScaleEvent
}

// Decision is the replicas to scale to and why.
type Decision struct {
	Replicas int32
	// StabilizedReason is the AbleToScale reason: ScaleUpStabilized,
	// ScaleDownStabilized or ReadyForNewScale.
	StabilizedReason, StabilizedMessage string
	// LimitedReason is the ScalingLimited reason: DesiredWithinRange
	// (not limited), ScaleUpLimit, ScaleDownLimit, TooManyReplicas,
	// TooFewReplicas.
	LimitedReason, LimitedMessage string
	Recommendations               []Recommendation
}

// Limited says whether the ScalingLimited condition is True.
func (d Decision) Limited() bool { return d.LimitedReason != "DesiredWithinRange" }

// Decide is upstream's normalizeDesiredReplicasWithBehaviors: the
// proposal stabilized over the windows, then bounded by the rate policies
// and by min/max. An autoscaler without behavior gets the defaulted rules
// with the DownscaleStabilization window.
func Decide(in Input) Decision {
	up, down := rules(in.Behavior)
	var d Decision
	d.Replicas, d.StabilizedReason, d.StabilizedMessage, d.Recommendations = stabilize(in, up, down)
	d.Replicas, d.LimitedReason, d.LimitedMessage = bound(in, d.Replicas, up, down)
	return d
}

func rules(b *autoscalingv2.HorizontalPodAutoscalerBehavior) (up, down *autoscalingv2.HPAScalingRules) {
	if b != nil {
		up, down = b.ScaleUp, b.ScaleDown
	}
	up, down = autoscalingdefaults.ScaleUpRules(up.DeepCopy()), autoscalingdefaults.ScaleDownRules(down.DeepCopy())
	if down.StabilizationWindowSeconds == nil {
		w := int32(DownscaleStabilization / time.Second)
		down.StabilizationWindowSeconds = &w
	}
	return up, down
}

// stabilize is upstream's stabilizeRecommendationWithBehaviors: a scale
// up goes no higher than the lowest recommendation of the up window, a
// scale down no lower than the highest of the down window.
func stabilize(in Input, up, down *autoscalingv2.HPAScalingRules) (int32, string, string, []Recommendation) {
	upCutoff := in.Now.Add(-time.Duration(*up.StabilizationWindowSeconds) * time.Second)
	downCutoff := in.Now.Add(-time.Duration(*down.StabilizationWindowSeconds) * time.Second)
	oldest := upCutoff
	if downCutoff.Before(oldest) {
		oldest = downCutoff
	}
	upRec, downRec := in.Proposed, in.Proposed
	kept := []Recommendation{{At: in.Now, Replicas: in.Proposed}}
	for _, r := range in.Recommendations {
		if r.At.After(upCutoff) {
			upRec = min(upRec, r.Replicas)
		}
		if r.At.After(downCutoff) {
			downRec = max(downRec, r.Replicas)
		}
		if r.At.After(oldest) {
			kept = append(kept, r)
		}
	}
	rec := max(in.CurrentReplicas, upRec)
	rec = min(rec, downRec)
	switch {
	case rec == in.Proposed:
		return rec, "ReadyForNewScale", "recommended size matches current size", kept
	case in.Proposed >= in.CurrentReplicas:
		return rec, "ScaleUpStabilized", "recent recommendations were lower than current one, applying the lowest recent recommendation", kept
	}
	return rec, "ScaleDownStabilized", "recent recommendations were higher than current one, applying the highest recent recommendation", kept
}

// bound is upstream's convertDesiredReplicasWithBehaviorRate: a scale
// up stops at the rate policies' limit or maxReplicas, whichever is
// lower, a scale down at the policies' limit or minReplicas, whichever
// is higher. (An autoscaler outside min/max to begin with is the
// runner's to bring in, as upstream's reconcile does.)
func bound(in Input, desired int32, up, down *autoscalingv2.HPAScalingRules) (int32, string, string) {
	upEvents, downEvents := split(in.Events)
	switch {
	case desired > in.CurrentReplicas:
		limit := max(scaleUpLimit(in.Now, in.CurrentReplicas, upEvents, downEvents, up), in.CurrentReplicas)
		allowed, reason, message := in.MaxReplicas, "TooManyReplicas", "the desired replica count is more than the maximum replica count"
		if allowed > limit {
			allowed, reason, message = limit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"
		}
		if desired > allowed {
			return allowed, reason, message
		}
	case desired < in.CurrentReplicas:
		limit := min(scaleDownLimit(in.Now, in.CurrentReplicas, upEvents, downEvents, down), in.CurrentReplicas)
		allowed, reason, message := in.MinReplicas, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
		if allowed < limit {
			allowed, reason, message = limit, "ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate"
		}
		if desired < allowed {
			return allowed, reason, message
		}
	}
	return desired, "DesiredWithinRange", "the desired count is within the acceptable range"
}

func split(events []ScaleEvent) (up, down []ScaleEvent) {
	for _, e := range events {
		if e.Change > 0 {
			up = append(up, e)
		} else if e.Change < 0 {
			down = append(down, ScaleEvent{At: e.At, Change: -e.Change})
		}
	}
	return up, down
}

// changeInPeriod is upstream's getReplicasChangePerPeriod.
func changeInPeriod(now time.Time, periodSeconds int32, events []ScaleEvent) int32 {
	cutoff := now.Add(-time.Duration(periodSeconds) * time.Second)
	var sum int32
	for _, e := range events {
		if e.At.After(cutoff) {
			sum += e.Change
		}
	}
	return sum
}

// scaleUpLimit is upstream's calculateScaleUpLimitWithScalingRules: per
// policy, the replicas at the period's start plus what it allows; the
// select policy picks among them (Max the largest change).
func scaleUpLimit(now time.Time, current int32, upEvents, downEvents []ScaleEvent, r *autoscalingv2.HPAScalingRules) int32 {
	return rateLimit(now, current, upEvents, downEvents, r, func(start int32, p autoscalingv2.HPAScalingPolicy) int32 {
		if p.Type == autoscalingv2.PercentScalingPolicy {
			return int32(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		}
		return start + p.Value
	}, larger)
}

// scaleDownLimit is upstream's calculateScaleDownLimitWithBehaviors: as
// scaleUpLimit, downwards (Max the lowest count).
func scaleDownLimit(now time.Time, current int32, upEvents, downEvents []ScaleEvent, r *autoscalingv2.HPAScalingRules) int32 {
	return rateLimit(now, current, upEvents, downEvents, r, func(start int32, p autoscalingv2.HPAScalingPolicy) int32 {
		if p.Type == autoscalingv2.PercentScalingPolicy {
			return int32(float64(start) * (1 - float64(p.Value)/100))
		}
		return start - p.Value
	}, smaller)
}

// rateLimit applies each policy (allow: the count it allows from the
// period's start) and picks among them: mostChange under Max, the other
// way under Min; Disabled allows no change.
func rateLimit(now time.Time, current int32, upEvents, downEvents []ScaleEvent, r *autoscalingv2.HPAScalingRules,
	allow func(start int32, p autoscalingv2.HPAScalingPolicy) int32, mostChange func(a, b int32) int32) int32 {
	if *r.SelectPolicy == autoscalingv2.DisabledPolicySelect {
		return current
	}
	pick := mostChange
	if *r.SelectPolicy == autoscalingv2.MinChangePolicySelect {
		pick = func(a, b int32) int32 { return a + b - mostChange(a, b) }
	}
	var result int32
	for i, p := range r.Policies {
		start := current - changeInPeriod(now, p.PeriodSeconds, upEvents) + changeInPeriod(now, p.PeriodSeconds, downEvents)
		proposed := allow(start, p)
		if i == 0 {
			result = proposed
			continue
		}
		result = pick(result, proposed)
	}
	return result
}

func larger(a, b int32) int32  { return max(a, b) }
func smaller(a, b int32) int32 { return min(a, b) }
