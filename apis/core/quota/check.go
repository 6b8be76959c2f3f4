package quota

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// Request is one write quota admission looks at.
type Request struct {
	Create      bool // else an update
	Subresource string
	Namespace   string
	Object, Old runtime.Object
}

// CheckRequest is upstream's CheckRequest (apiserver's resourcequota
// admission, without limitedResources, which kube-apiserver configures
// none of by default): the quotas of the request's namespace that match
// its object must allow what it adds to their usage. It returns the
// quotas with their status.used charged with it (the same slice when
// nothing changes), or the refusal, in upstream's words: "exceeded quota:
// <name>, requested: ..., used: ..., limited: ...", "failed quota: <name>:
// must specify ...", "status unknown for quota: ...".
func CheckRequest(quotas []corev1.ResourceQuota, ev *Evaluator, req Request, now time.Time) ([]corev1.ResourceQuota, error) {
	if !ev.Handles(req.Create, req.Subresource, req.Object, req.Old) {
		return quotas, nil
	}
	obj := req.Object
	var interesting []int
	for i := range quotas {
		q := &quotas[i]
		match, err := ev.Matches(q, obj)
		if err != nil {
			return nil, fmt.Errorf("matching quota %s: %w", q.Name, err)
		}
		if !match {
			continue
		}
		restricted := ev.MatchingResources(ResourceNames(q.Status.Hard))
		if err := ev.Constraints(restricted, obj); err != nil {
			return nil, fmt.Errorf("failed quota: %s: %w", q.Name, err)
		}
		if !HasUsageStats(q, restricted) {
			return nil, fmt.Errorf("status unknown for quota: %s, resources: %s", q.Name, PrettyPrintNames(restricted))
		}
		interesting = append(interesting, i)
	}
	if len(interesting) == 0 {
		return quotas, nil
	}
	if m, err := meta.Accessor(obj); err == nil && req.Namespace != "" && m.GetNamespace() == "" {
		m.SetNamespace(req.Namespace)
	}
	usage, err := ev.Usage(obj, now)
	if err != nil {
		return nil, err
	}
	if neg := Negative(usage); len(neg) > 0 {
		return nil, fmt.Errorf("quota usage is negative for resource(s): %s", PrettyPrintNames(neg))
	}
	delta := map[int]corev1.ResourceList{}
	for _, i := range interesting {
		delta[i] = usage
	}
	if !req.Create {
		if req.Old == nil {
			return nil, fmt.Errorf("unable to get previous usage since prior version of object was not found")
		}
		if m, err := meta.Accessor(req.Old); err == nil && m.GetResourceVersion() != "" {
			prev, err := ev.Usage(req.Old, now)
			if err != nil {
				return nil, err
			}
			d := SubtractNonNegative(usage, prev)
			for _, i := range interesting {
				match, err := ev.Matches(&quotas[i], req.Old)
				if err != nil {
					return nil, fmt.Errorf("matching quota %s: %w", quotas[i].Name, err)
				}
				if match {
					delta[i] = d
				}
			}
		}
	}
	out := slices.Clone(quotas)
	changed := false
	for _, i := range interesting {
		d := RemoveZeros(delta[i])
		if len(d) == 0 {
			continue
		}
		q := out[i].DeepCopy()
		requested := Mask(d, ResourceNames(q.Status.Hard))
		used := Add(q.Status.Used, requested)
		if req.Subresource != "status" {
			if ok, exceeded := LessThanOrEqual(Mask(used, ResourceNames(requested)), q.Status.Hard); !ok {
				return nil, fmt.Errorf("exceeded quota: %s, requested: %s, used: %s, limited: %s", q.Name,
					PrettyPrint(Mask(requested, exceeded)), PrettyPrint(Mask(q.Status.Used, exceeded)), PrettyPrint(Mask(q.Status.Hard, exceeded)))
			}
		}
		q.Status.Used = used
		out[i] = *q
		changed = true
	}
	if !changed {
		return quotas, nil
	}
	return out, nil
}
