package bootstrap

import (
	"testing"
	"time"
)

// TestRenewAt: the kubelet's rotation deadline, between 70 and 90 % of
// the life from notBefore.
func TestRenewAt(t *testing.T) {
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	to := from.Add(100 * time.Hour)
	for _, tc := range []struct {
		name     string
		fraction float64
		want     time.Duration
	}{
		{"the earliest is at 70 %", 0, 70 * time.Hour},
		{"half way is at 80 %", 0.5, 80 * time.Hour},
		{"the latest is at 90 %", 1, 90 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RenewAt(from, to, tc.fraction); got.Sub(from.Add(tc.want)).Abs() > time.Millisecond {
				t.Errorf("RenewAt = %v, want %v", got, from.Add(tc.want))
			}
		})
	}
}
