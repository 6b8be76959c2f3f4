package volumes

import (
	"testing"
	"time"
)

// TestTokenRequiresRefreshAsUpstreamsTokenManager: at 80 % of its life, a
// day after it was issued, or once expired, not before.
func TestTokenRequiresRefreshAsUpstreamsTokenManager(t *testing.T) {
	issued := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hour := boundToken{issued: issued, expiresAt: issued.Add(time.Hour)}
	year := boundToken{issued: issued, expiresAt: issued.Add(365 * 24 * time.Hour)}
	tests := []struct {
		name    string
		token   boundToken
		at      time.Duration // after issued
		refresh bool
	}{
		{name: "fresh", token: hour, at: time.Minute},
		{name: "just before 80%", token: hour, at: 48*time.Minute - time.Second},
		{name: "at 80%", token: hour, at: 48 * time.Minute, refresh: true},
		{name: "expired", token: hour, at: 2 * time.Hour, refresh: true},
		{name: "long token within a day", token: year, at: 23 * time.Hour},
		{name: "long token after a day", token: year, at: 24*time.Hour + time.Second, refresh: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tokenRequiresRefresh(issued.Add(tt.at), tt.token); got != tt.refresh {
				t.Errorf("got %v, want %v", got, tt.refresh)
			}
		})
	}
}
