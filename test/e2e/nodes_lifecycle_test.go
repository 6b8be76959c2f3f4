package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStoppedAgentsNodeGoesUnknownAndItsPodsAreEvictedAndReplaced runs "kite server"
// (node life-a, its own agent) and a second "kite agent" (node life-b),
// with a 5 s --node-monitor-grace-period. When life-b's agent stops, its
// node goes Unknown and is tainted unreachable, and its pod, which
// tolerates that for 2 s, is evicted (the taint manager's condition and a
// graceful delete that waits for the node); when the agent returns the
// node is Ready again, untainted, and the agent finishes the pod. A
// Deployment's pod on life-b is evicted as well and replaced on life-a by
// its ReplicaSet, one pod for the one lost. A pod that fits nowhere shows
// its FailedScheduling message in kubectl describe.
func TestStoppedAgentsNodeGoesUnknownAndItsPodsAreEvictedAndReplaced(t *testing.T) {
	needKubectl(t)
	t.Parallel()
	root := supervisedDir(t)
	dir := filepath.Join(root, "data")
	config := agentConfig(t)
	StartKite(t, "server", "--data-dir", dir, "--secure-port=0", "--unsafe-no-fsync", testGraceFlag,
		"--hostname-override", "life-a", "--config", config, "--port", "10280")
	kc := filepath.Join(dir, "kubeconfig")
	agentArgs := []string{"agent", "--kubeconfig", kc, "--hostname-override", "life-b", "--config", config,
		"--root-dir", filepath.Join(root, "agent"), "--port", "10281", "--node-ip", "127.0.0.2"}
	agent := StartKite(t, agentArgs...)
	for _, node := range []string{"life-a", "life-b"} {
		waitNodeReady(t, "", kc, node, "True")
	}
	if out := kubectl(t, kc, "get", "nodes"); strings.Count(out, " Ready ") != 2 {
		t.Errorf("kubectl get nodes, want both Ready:\n%s", out)
	}
	if got := getIn(t, "", kc, `{.status.addresses[?(@.type=="InternalIP")].address}`, "node", "life-b"); got != "127.0.0.2" {
		t.Errorf("node life-b InternalIP %q, want its --node-ip 127.0.0.2", got)
	}

	// Fits nowhere: more cpu than either node has.
	applyIn(t, "", kc, sleeperPod(podSpec{name: "huge", marker: newMarker(t), cpu: "100000"}))
	eventually(t, "kubectl describe pod huge shows no FailedScheduling", func() bool {
		out, err := tryKubectl(t, kc, "describe", "pod", "huge")
		return err == nil && strings.Contains(out, "FailedScheduling") && strings.Contains(out, "0/2 nodes are available: 2 Insufficient cpu.")
	})
	kubectl(t, kc, "delete", "pod", "huge", "--wait=true")

	// Deployment web's pod goes to life-b: life-a is cordoned while it is
	// scheduled.
	kubectl(t, kc, "cordon", "life-a")
	webMarker := newMarker(t)
	applyIn(t, "", kc, sleeperDeployment(podSpec{name: "web", marker: webMarker, tolerationSeconds: 2}))
	var webFirst string
	eventually(t, "deployment web's pod is not Running on life-b", func() bool {
		pods := appPods(t, kc, "web")
		if len(pods) == 1 && pods[0].node == "life-b" && pods[0].phase == "Running" {
			webFirst = pods[0].name
		}
		return webFirst != ""
	})
	kubectl(t, kc, "uncordon", "life-a")

	marker := newMarker(t)
	applyIn(t, "", kc, sleeperPod(podSpec{name: "doomed", node: "life-b", marker: marker, tolerationSeconds: 2}))
	eventually(t, "pod doomed is not Running", func() bool {
		return getIn(t, "", kc, "{.status.phase}", "pod", "doomed") == "Running"
	})

	stopAgent(t, agent)
	stopped := time.Now()
	waitNodeReady(t, "", kc, "life-b", "Unknown")
	unknownAfter := time.Since(stopped)
	if out := kubectl(t, kc, "get", "node", "life-b"); !strings.Contains(out, " NotReady ") {
		t.Errorf("kubectl get node of the stopped agent, want NotReady:\n%s", out)
	}
	if got := getIn(t, "", kc, `{.status.conditions[?(@.type=="Ready")].reason}`, "node", "life-b"); got != "NodeStatusUnknown" {
		t.Errorf("Ready reason %q, want NodeStatusUnknown", got)
	}
	eventually(t, "node life-b is not tainted unreachable:NoExecute", func() bool {
		return strings.Contains(getIn(t, "", kc, `{range .spec.taints[*]}{.key}:{.effect} {end}`, "node", "life-b"), "node.kubernetes.io/unreachable:NoExecute")
	})
	eventually(t, "pod doomed is not evicted", func() bool {
		out := getIn(t, "", kc, `{.status.conditions[?(@.type=="DisruptionTarget")].reason} {.metadata.deletionTimestamp}`, "pod", "doomed")
		reason, deleted, _ := strings.Cut(out, " ")
		return reason == "DeletionByTaintManager" && deleted != ""
	})
	evictedAfter := time.Since(stopped)
	// Not before its toleration: the eviction's condition is at least 2 s
	// after the NoExecute taint was added (both to the second).
	tainted, err1 := time.Parse(time.RFC3339, getIn(t, "", kc, `{range .spec.taints[?(@.effect=="NoExecute")]}{.timeAdded}{end}`, "node", "life-b"))
	evicted, err2 := time.Parse(time.RFC3339, getIn(t, "", kc, `{.status.conditions[?(@.type=="DisruptionTarget")].lastTransitionTime}`, "pod", "doomed"))
	if err1 != nil || err2 != nil {
		t.Errorf("taint time %v, eviction time %v", err1, err2)
	} else if evicted.Sub(tainted) < 2*time.Second {
		t.Errorf("evicted at %s, tainted NoExecute at %s: sooner than its 2 s toleration", evicted, tainted)
	}
	// Its ReplicaSet replaces web's evicted pod on the node that is left.
	var webSecond string
	eventually(t, "deployment web's evicted pod is not replaced by a Running one on life-a", func() bool {
		for _, p := range appPods(t, kc, "web") {
			if p.name != webFirst && p.node == "life-a" && p.phase == "Running" && !p.deleting {
				webSecond = p.name
			}
		}
		return webSecond != ""
	})
	recreatedAfter := time.Since(stopped)
	if got := getIn(t, "", kc, `{.status.conditions[?(@.type=="DisruptionTarget")].reason}`, "pod", webFirst); got != "DeletionByTaintManager" {
		t.Errorf("deployment web's first pod %s: DisruptionTarget reason %q, want DeletionByTaintManager", webFirst, got)
	}
	kubectl(t, kc, "rollout", "status", "deployment/web", "--timeout=30s")
	t.Logf("agent stopped: node seen Unknown after %s, pod seen evicted after %s, deployment's pod Running elsewhere after %s",
		unknownAfter.Round(time.Millisecond), evictedAfter.Round(time.Millisecond), recreatedAfter.Round(time.Millisecond))
	// The node's agent is gone: the pod stays Terminating, its process runs.
	if n := markerProcesses(marker); n != 1 {
		t.Errorf("%d processes of the evicted pod while its agent is down, want 1 (the supervisor keeps it)", n)
	}

	agent = StartKite(t, agentArgs...)
	waitNodeReady(t, "", kc, "life-b", "True")
	eventually(t, "node life-b keeps a NoExecute taint", func() bool {
		return !strings.Contains(getIn(t, "", kc, `{range .spec.taints[*]}{.effect} {end}`, "node", "life-b"), "NoExecute")
	})
	eventually(t, "the returned agent did not finish the evicted pod", func() bool {
		_, err := tryKubectl(t, kc, "get", "pod", "doomed")
		return err != nil && markerProcesses(marker) == 0
	})
	// Web's evicted pod is finished too, and only its replacement is left:
	// the ReplicaSet made one pod for the one it lost, not more.
	eventually(t, "deployment web has other pods than its replacement "+webSecond, func() bool {
		pods := appPods(t, kc, "web")
		return len(pods) == 1 && pods[0].name == webSecond && markerProcesses(webMarker) == 1
	})
	stopAgent(t, agent)
}

// appPod is what appPods tells of a pod.
type appPod struct {
	name, node, phase string
	deleting          bool
}

// appPods lists the pods labelled app=app; nil when kubectl fails.
func appPods(t *testing.T, kubeconfig, app string) []appPod {
	t.Helper()
	out := getIn(t, "", kubeconfig, `{range .items[*]}{.metadata.name} {.spec.nodeName} {.status.phase} {.metadata.deletionTimestamp}{"\n"}{end}`, "pods", "-l", "app="+app)
	var pods []appPod
	for line := range strings.SplitSeq(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		pods = append(pods, appPod{name: f[0], node: f[1], phase: f[2], deleting: len(f) > 3})
	}
	return pods
}

// TestOnlyNodesStoppedAgentEvictsNothing runs "kite apiserver" and one
// "kite agent": when the only node's agent stops, the node goes Unknown
// but, every node being down (upstream's full disruption), its pod is not
// evicted even past its toleration; the returning agent finds it running.
func TestOnlyNodesStoppedAgentEvictsNothing(t *testing.T) {
	needKubectl(t)
	t.Parallel()
	root := supervisedDir(t)
	dir := filepath.Join(root, "data")
	StartKite(t, "apiserver", "--data-dir", dir, "--secure-port=0", "--unsafe-no-fsync", testGraceFlag)
	kc := filepath.Join(dir, "kubeconfig")
	agentArgs := []string{"agent", "--kubeconfig", kc, "--hostname-override", "solo", "--config", agentConfig(t),
		"--root-dir", filepath.Join(root, "agent"), "--port", "10282", "--node-ip", "127.0.0.1"}
	agent := StartKite(t, agentArgs...)
	marker := newMarker(t)
	applyIn(t, "", kc, sleeperPod(podSpec{name: "kept", marker: marker, tolerationSeconds: 1}))
	eventually(t, "pod kept is not Running on solo", func() bool {
		return getIn(t, "", kc, "{.status.phase} {.spec.nodeName}", "pod", "kept") == "Running solo"
	})

	stopAgent(t, agent)
	waitNodeReady(t, "", kc, "solo", "Unknown")
	// Past the toleration, with room for the controllers' periods.
	time.Sleep(4 * time.Second)
	if got := getIn(t, "", kc, `{.metadata.deletionTimestamp}{.status.conditions[?(@.type=="DisruptionTarget")].reason}`, "pod", "kept"); got != "" {
		t.Errorf("the only node's pod was evicted: %q", got)
	}
	if taints := getIn(t, "", kc, `{range .spec.taints[*]}{.key}:{.effect} {end}`, "node", "solo"); strings.Contains(taints, "NoExecute") {
		t.Errorf("the only node, down, has NoExecute taints: %s", taints)
	}

	agent = StartKite(t, agentArgs...)
	waitNodeReady(t, "", kc, "solo", "True")
	if got := getIn(t, "", kc, "{.status.phase} {.status.containerStatuses[0].restartCount}", "pod", "kept"); got != "Running 0" {
		t.Errorf("after the agent's return, pod kept: %q, want Running with 0 restarts", got)
	}
	if n := markerProcesses(marker); n != 1 {
		t.Errorf("%d processes of pod kept, want 1", n)
	}
	kubectl(t, kc, "delete", "pod", "kept", "--wait=true", "--timeout=30s")
	if n := markerProcesses(marker); n != 0 {
		t.Errorf("after the delete, %d processes of pod kept are left", n)
	}
	stopAgent(t, agent)
}
