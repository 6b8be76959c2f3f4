package config

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestUpdateCarriesTheGeneration: an UPDATE hands on the pod's new
// generation, as upstream's checkAndUpdatePod, so that the status reports
// it as observedGeneration (conformance "Pod Generation ... increment per
// update").
func TestUpdateCarriesTheGeneration(t *testing.T) {
	gen := func(g int64) func(*v1.Pod) { return func(p *v1.Pod) { p.Generation = g } }
	st, _ := Merge(State{}, set(file, pod("a", "1", gen(1))), now)
	_, res := Merge(st, set(file, pod("a", "1", gen(2), withImage("v2"))), now.Add(time.Second))
	if len(res.Updates) == 0 || len(res.Updates[0].Pods) == 0 {
		t.Fatalf("no update: %+v", res.Updates)
	}
	if got := res.Updates[0].Pods[0].Generation; got != 2 {
		t.Errorf("generation %d after the update, want 2", got)
	}
}
