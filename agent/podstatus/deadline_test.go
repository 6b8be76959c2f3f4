package podstatus

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestActiveDeadline(t *testing.T) {
	secs := func(v int64) *int64 { return &v }
	start := t0
	cases := []struct {
		name     string
		deadline *int64
		start    *time.Time
		now      time.Time
		left     time.Duration
		exceeded bool
	}{
		{"no deadline", nil, &start, t0.Add(time.Hour), 0, false},
		{"not started", secs(10), nil, t0.Add(time.Hour), 0, false},
		{"within", secs(10), &start, t0.Add(4 * time.Second), 6 * time.Second, false},
		{"exactly at", secs(10), &start, t0.Add(10 * time.Second), 0, true},
		{"past", secs(10), &start, t0.Add(time.Minute), 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1.Pod{Spec: v1.PodSpec{ActiveDeadlineSeconds: tc.deadline}}
			left, exceeded := ActiveDeadline(p, tc.start, tc.now)
			if left != tc.left || exceeded != tc.exceeded {
				t.Errorf("ActiveDeadline = %v, %v; want %v, %v", left, exceeded, tc.left, tc.exceeded)
			}
		})
	}
	s := ExceedDeadline(v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}})
	if s.Phase != v1.PodFailed || s.Reason != "DeadlineExceeded" || s.Message != MessageDeadlineExceeded || s.Conditions[0].Status != v1.ConditionFalse {
		t.Errorf("ExceedDeadline = %+v", s)
	}
}
