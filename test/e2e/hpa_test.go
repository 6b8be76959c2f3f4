package e2e

import (
	"slices"
	"testing"
	"time"
)

// hpaScalesDownOnceTheLoadStops follows TestKubectlTopShowsWhatPodsUse's
// scale-up of Deployment name (at 3 replicas under its HPA of the same
// name): the HPA's scale-down window is made 20 s (upstream's default is
// 300 s), the Deployment's pods stop burning (a new template that
// sleeps), and the HPA brings the Deployment down to 1 only after holding
// it for the window: its AbleToScale condition says ScaleDownStabilized
// meanwhile. The HPA syncs every 15 s,
// so the window spans at least one sync that sees the pods idle.
func hpaScalesDownOnceTheLoadStops(t *testing.T, kc, name string) {
	t.Helper()
	// A sleep that is the container's only process: a shell loop forking a
	// sleep every second uses more than the pods' 5m request on a loaded
	// machine, and would hold the scale up.
	idle := newMarker(t)
	const window = 20 * time.Second
	kubectl(t, kc, "patch", "hpa", name, "--type=merge", "-p", `{"spec":{"behavior":{"scaleDown":{"stabilizationWindowSeconds":20}}}}`)
	// Every pod replaced at once (maxSurge 100%), so that the load stops
	// with the rollout's first step.
	kubectl(t, kc, "patch", "deployment", name, "--type=json", "-p",
		`[{"op":"replace","path":"/spec/strategy/rollingUpdate/maxSurge","value":"100%"},`+
			`{"op":"replace","path":"/spec/template/spec/containers/0/command","value":["sh","-c","exec `+idle+`"]}]`)
	stopped := time.Now()
	kubectl(t, kc, "rollout", "status", "deployment/"+name, "--timeout=3m")
	rolled := time.Since(stopped)
	var reasons []string
	for deadline := time.Now().Add(4 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		reason := getIn(t, "", kc, `{.status.conditions[?(@.type=="AbleToScale")].reason}`, "hpa", name)
		replicas := getIn(t, "", kc, "{.spec.replicas}", "deployment", name)
		if replicas == "3" && reason != "" && !slices.Contains(reasons, reason) {
			reasons = append(reasons, reason)
		}
		if replicas == "1" {
			break
		}
		if time.Now().After(deadline) {
			hpa, _ := tryKubectl(t, kc, "describe", "hpa", name)
			t.Fatalf("the HPA did not scale the idle Deployment down to 1 (replicas %q):\n%s", replicas, hpa)
		}
	}
	held := time.Since(stopped)
	if held < window {
		t.Errorf("scaled down %s after the load stopped, within the %s stabilization window", held, window)
	}
	if !slices.Contains(reasons, "ScaleDownStabilized") {
		t.Errorf("AbleToScale reasons while at 3 replicas %v, want ScaleDownStabilized", reasons)
	}
	t.Logf("the HPA scaled the idle Deployment down %s after its load stopped (rolled out in %s; window %s); AbleToScale reasons at 3 replicas %v",
		held.Round(time.Second), rolled.Round(time.Second), window, reasons)
}
