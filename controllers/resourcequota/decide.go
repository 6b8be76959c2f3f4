package resourcequota

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kite-project/kite/apis/core/quota"
)

// evaluated are the resources whose usage is more than a count.
var evaluated = []schema.GroupResource{corev1.Resource("pods"), corev1.Resource("services"), corev1.Resource("persistentvolumeclaims")}

// Resources are the group resources whose objects a quota's hard limits
// are computed from, sorted.
func Resources(hard corev1.ResourceList) []schema.GroupResource {
	names := quota.ResourceNames(hard)
	var out []schema.GroupResource
	add := func(gr schema.GroupResource) {
		if !slices.Contains(out, gr) {
			out = append(out, gr)
		}
	}
	for _, gr := range evaluated {
		if len(quota.For(gr).MatchingResources(names)) > 0 {
			add(gr)
		}
	}
	for _, n := range names {
		if gr, ok := quota.CountedResource(n); ok && !quota.Ignored(gr) {
			add(gr)
		}
	}
	slices.SortFunc(out, func(a, b schema.GroupResource) int {
		if a.Group != b.Group {
			return compare(a.Group, b.Group)
		}
		return compare(a.Resource, b.Resource)
	})
	return out
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Status is upstream's syncResourceQuota decision: status.hard is
// spec.hard, status.used what objects (the namespace's, by group
// resource) use of it, each object counted when every scope of the
// quota matches it, every hard resource with a value (zero when nothing
// uses it). dirty says whether the stored status differs.
func Status(q *corev1.ResourceQuota, objects map[schema.GroupResource][]runtime.Object, now time.Time) (status corev1.ResourceQuotaStatus, dirty bool, err error) {
	hard := quota.Add(corev1.ResourceList{}, q.Spec.Hard)
	names := quota.ResourceNames(hard)
	used := quota.Add(corev1.ResourceList{}, q.Status.Used)
	selectors := quota.ScopeSelectors(q)
	for gr, objs := range objects {
		ev := quota.For(gr)
		matched := ev.MatchingResources(names)
		if len(matched) == 0 {
			continue
		}
		sum := corev1.ResourceList{}
		for _, n := range matched {
			sum[n] = resource.Quantity{Format: resource.DecimalSI}
		}
	objects:
		for _, obj := range objs {
			for _, sel := range selectors {
				ok, err := ev.MatchesScope(sel, obj)
				if err != nil {
					return status, false, fmt.Errorf("quota %s/%s scope %s: %w", q.Namespace, q.Name, sel.ScopeName, err)
				}
				if !ok {
					continue objects
				}
			}
			u, err := ev.Usage(obj, now)
			if err != nil {
				return status, false, fmt.Errorf("quota %s/%s usage of %s: %w", q.Namespace, q.Name, gr, err)
			}
			sum = quota.Add(sum, quota.Mask(u, matched))
		}
		for k, v := range sum {
			used[k] = v
		}
	}
	used = quota.Mask(used, names)
	status = corev1.ResourceQuotaStatus{Hard: hard, Used: used}
	dirty = !quota.Equals(q.Spec.Hard, q.Status.Hard) || !quota.Equals(used, q.Status.Used)
	return status, dirty, nil
}

// NeedsSync is upstream's addQuota test: a quota whose status does not
// yet reflect its spec (hard differs, or a hard resource has no used).
func NeedsSync(q *corev1.ResourceQuota) bool {
	if !quota.Equals(q.Spec.Hard, q.Status.Hard) {
		return true
	}
	for name := range q.Status.Hard {
		if _, ok := q.Status.Used[name]; !ok {
			return true
		}
	}
	return false
}

// PodChanged says whether a pod update changes what it uses: it stops
// (or starts) being charged, starts terminating, or is resized.
func PodChanged(old, pod *corev1.Pod, now time.Time) bool {
	if quota.PodCounts(old, now) != quota.PodCounts(pod, now) || quota.IsTerminating(old) != quota.IsTerminating(pod) {
		return true
	}
	return !quota.Equals(quota.PodUsage(old, now), quota.PodUsage(pod, now))
}
