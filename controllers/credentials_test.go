package controllers

import "testing"

// TestEveryControllerHasAnIdentity: with service-account credentials
// (kite server, kite.Start) a controller nobody gave a ServiceAccount
// cannot start, so every controller of the table names one (or the
// Manager's own identity, "").
func TestEveryControllerHasAnIdentity(t *testing.T) {
	for _, name := range All() {
		if name == Scheduler {
			continue // system:kube-scheduler, Options.SchedulerConfig
		}
		if _, ok := serviceAccountOf(name); !ok {
			t.Errorf("controller %s has no ServiceAccount in serviceAccountOf (credentials.go): give it upstream's (kube-controller-manager's NewClient name)", name)
		}
	}
}
