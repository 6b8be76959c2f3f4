package podstatus

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// The kubelet's reason and message for a pod past its
// activeDeadlineSeconds (pkg/kubelet/active_deadline.go).
const (
	ReasonDeadlineExceeded  = "DeadlineExceeded"
	MessageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// ActiveDeadline says how long the pod may still be active (left > 0),
// or that its activeDeadlineSeconds passed (exceeded); without a deadline
// or a start time, neither.
func ActiveDeadline(pod *v1.Pod, startTime *time.Time, now time.Time) (left time.Duration, exceeded bool) {
	if pod.Spec.ActiveDeadlineSeconds == nil || startTime == nil {
		return 0, false
	}
	left = time.Duration(*pod.Spec.ActiveDeadlineSeconds)*time.Second - now.Sub(*startTime)
	if left <= 0 {
		return 0, true
	}
	return left, false
}

// ExceedDeadline is s failed for the active deadline, as the kubelet's
// pod sync handler evicts it.
func ExceedDeadline(s v1.PodStatus) v1.PodStatus {
	s.Phase, s.Reason, s.Message = v1.PodFailed, ReasonDeadlineExceeded, MessageDeadlineExceeded
	for i := range s.Conditions {
		if t := s.Conditions[i].Type; (t == v1.PodReady || t == v1.ContainersReady) && s.Conditions[i].Status == v1.ConditionTrue {
			s.Conditions[i].Status, s.Conditions[i].Reason, s.Conditions[i].Message = v1.ConditionFalse, ReasonPodFailed, ""
		}
	}
	return s
}
