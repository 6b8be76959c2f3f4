package podactions

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestImageDecision(t *testing.T) {
	cases := []struct {
		policy  v1.PullPolicy
		present bool
		want    ImageAction
	}{
		{v1.PullAlways, true, Pull},
		{v1.PullAlways, false, Pull},
		{v1.PullIfNotPresent, true, UsePresent},
		{v1.PullIfNotPresent, false, Pull},
		{v1.PullNever, true, UsePresent},
		{v1.PullNever, false, NeverPull},
	}
	for _, tc := range cases {
		if got := ImageDecision(tc.policy, tc.present); got != tc.want {
			t.Errorf("ImageDecision(%s, present %v) = %v, want %v", tc.policy, tc.present, got, tc.want)
		}
	}
}

func TestImageBackOffDoublesAndResets(t *testing.T) {
	var b ImageBackOff
	now := time.Unix(1000, 0)
	if b.InBackOff("k", now) {
		t.Fatal("in back-off before any failure")
	}
	for i, want := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second} {
		b.Failed("k", now)
		if !b.InBackOff("k", now.Add(want-time.Millisecond)) || b.InBackOff("k", now.Add(want)) {
			t.Fatalf("failure %d: back-off is not %s", i+1, want)
		}
		now = now.Add(want)
	}
	b.Succeeded("k")
	if b.InBackOff("k", now) {
		t.Fatal("in back-off after a success")
	}
	b.Failed("k", now)
	b.Failed("k", now.Add(11*time.Minute))
	if b.InBackOff("k", now.Add(11*time.Minute+10*time.Second)) {
		t.Fatal("an entry idle for over twice the maximum did not start afresh")
	}
}
