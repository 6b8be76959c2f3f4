package tainteviction

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// Decision is what becomes of a pod on a node with NoExecute taints.
type Decision struct {
	// Evict says the pod goes, After its tolerations allow (0: now).
	Evict bool
	After time.Duration
}

// Decide is upstream's taint eviction rule: a NoExecute taint the pod
// does not tolerate evicts it now; if it tolerates all of them, it goes
// after the smallest tolerationSeconds (at once if that is not positive),
// and never if no toleration sets one.
func Decide(pod *v1.Pod, taints []v1.Taint) Decision {
	minSeconds, bounded := int64(0), false
	tainted := false
	for i := range taints {
		t := &taints[i]
		if t.Effect != v1.TaintEffectNoExecute {
			continue
		}
		tainted = true
		matched := false
		for j := range pod.Spec.Tolerations {
			tol := &pod.Spec.Tolerations[j]
			if !tol.ToleratesTaint(klog.Background(), t, true) {
				continue
			}
			matched = true
			if tol.TolerationSeconds != nil {
				if !bounded || *tol.TolerationSeconds < minSeconds {
					minSeconds, bounded = *tol.TolerationSeconds, true
				}
			}
		}
		if !matched {
			return Decision{Evict: true}
		}
	}
	if !tainted || !bounded {
		return Decision{}
	}
	return Decision{Evict: true, After: max(0, time.Duration(minSeconds)*time.Second)}
}
