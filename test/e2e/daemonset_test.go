package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// TestDaemonSetsFollowTheNodes runs "kite server" (node ds-a, its own
// agent) and two "kite agent"s (ds-b from the start, ds-c joining later)
// with three DaemonSets: "every" tolerates ds-a's NoSchedule taint and
// runs on every node, "plain" tolerates nothing and stays off ds-a,
// "picky" selects role=infra (ds-a only). Each node that should run a
// daemon pod gets exactly one; ds-c joining gets its pods; a rolling
// update of "every" with maxUnavailable 1 replaces its pods one node at
// a time (never two nodes without a ready pod); ds-c deleted loses its
// pods (the pod GC's, after its 40 s quarantine, as upstream).
func TestDaemonSetsFollowTheNodes(t *testing.T) {
	needKubectl(t)
	t.Parallel()
	root := supervisedDir(t)
	dir := filepath.Join(root, "data")
	config := agentConfig(t)
	StartKite(t, "server", "--data-dir", dir, "--secure-port=0", "--unsafe-no-fsync", testGraceFlag,
		"--hostname-override", "ds-a", "--config", config, "--port", "10290")
	kc := filepath.Join(dir, "kubeconfig")
	agentArgs := func(node, port, ip string) []string {
		return []string{"agent", "--kubeconfig", kc, "--hostname-override", node, "--config", config,
			"--root-dir", filepath.Join(root, node), "--port", port, "--node-ip", ip}
	}
	StartKite(t, agentArgs("ds-b", "10291", "127.0.0.2")...)
	for _, node := range []string{"ds-a", "ds-b"} {
		waitNodeReady(t, "", kc, node, "True")
	}
	kubectl(t, kc, "taint", "node", "ds-a", "dedicated=infra:NoSchedule")
	kubectl(t, kc, "label", "node", "ds-a", "role=infra")

	everyMarker, plainMarker, pickyMarker := newMarker(t), newMarker(t), newMarker(t)
	applyIn(t, "", kc, []byte(strings.Join([]string{
		daemonSetYAML("every", everyMarker, "      tolerations: [{key: dedicated, operator: Exists, effect: NoSchedule}]\n"),
		daemonSetYAML("plain", plainMarker, ""),
		daemonSetYAML("picky", pickyMarker, "      nodeSelector: {role: infra}\n      tolerations: [{key: dedicated, operator: Exists}]\n"),
	}, "---\n")))
	want := map[string][]string{"every": {"ds-a", "ds-b"}, "plain": {"ds-b"}, "picky": {"ds-a"}}
	waitDaemonPods(t, kc, want)
	for _, ds := range []string{"every", "plain", "picky"} {
		kubectl(t, kc, "rollout", "status", "daemonset/"+ds, "--timeout=60s")
	}
	if got := getIn(t, "", kc, "{.status.desiredNumberScheduled} {.status.currentNumberScheduled} {.status.numberReady} {.status.numberMisscheduled}", "daemonset", "every"); got != "2 2 2 0" {
		t.Errorf("daemonset every status desired/current/ready/misscheduled %q, want 2 2 2 0", got)
	}

	// A node joins: it gets the pods of the sets that select it.
	agentC := StartKite(t, agentArgs("ds-c", "10292", "127.0.0.3")...)
	waitNodeReady(t, "", kc, "ds-c", "True")
	want = map[string][]string{"every": {"ds-a", "ds-b", "ds-c"}, "plain": {"ds-b", "ds-c"}, "picky": {"ds-a"}}
	waitDaemonPods(t, kc, want)
	kubectl(t, kc, "rollout", "status", "daemonset/every", "--timeout=60s")

	// A rolling update, maxUnavailable 1 (the default): one node at a time.
	cs := clientsetFor(t, kc)
	rollingUpdateOneNodeAtATime(t, cs, kc, "every", []string{"ds-a", "ds-b", "ds-c"})
	waitDaemonPods(t, kc, want)
	if got := getIn(t, "", kc, "{.status.updatedNumberScheduled} {.status.numberAvailable} {.status.observedGeneration}", "daemonset", "every"); got != "3 3 2" {
		t.Errorf("daemonset every status updated/available/observedGeneration %q, want 3 3 2", got)
	}

	// A node leaves: its agent stops and it is deleted; the pod GC deletes
	// its pods once the node has been gone for its quarantine.
	stopAgent(t, agentC)
	kubectl(t, kc, "delete", "node", "ds-c")
	deleted := time.Now()
	want = map[string][]string{"every": {"ds-a", "ds-b"}, "plain": {"ds-b"}, "picky": {"ds-a"}}
	waitDaemonPodsWithin(t, kc, want, 2*time.Minute)
	t.Logf("the deleted node's daemon pods were gone %s after its deletion", time.Since(deleted).Round(time.Second))
	if got := getIn(t, "", kc, "{.status.desiredNumberScheduled} {.status.currentNumberScheduled}", "daemonset", "every"); got != "2 2" {
		t.Errorf("after ds-c's deletion, daemonset every desired/current %q, want 2 2", got)
	}
}

// daemonSetYAML is a DaemonSet whose pods, labelled app=name, run marker;
// extra is more of the pod spec (indented six spaces).
func daemonSetYAML(name, marker, extra string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: DaemonSet
metadata: {name: %[1]s}
spec:
  selector: {matchLabels: {app: %[1]s}}
  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 1}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      terminationGracePeriodSeconds: 2
%[3]s      containers:
      - name: c
        image: busybox
        command: [sh, -c, "exec %[2]s"]
`, name, marker, extra)
}

// waitDaemonPods waits until each DaemonSet of want has exactly one
// Running pod on each of its nodes and no other pod.
func waitDaemonPods(t *testing.T, kc string, want map[string][]string) {
	t.Helper()
	waitDaemonPodsWithin(t, kc, want, pollTimeout)
}

func waitDaemonPodsWithin(t *testing.T, kc string, want map[string][]string, limit time.Duration) {
	t.Helper()
	var got map[string][]string
	for deadline := time.Now().Add(limit); ; time.Sleep(200 * time.Millisecond) {
		got = map[string][]string{}
		for ds := range want {
			for _, p := range appPods(t, kc, ds) {
				if p.phase != "Running" || p.deleting {
					p.node += "(" + p.phase + ")"
				}
				got[ds] = append(got[ds], p.node)
			}
			slices.Sort(got[ds])
		}
		same := true
		for ds, nodes := range want {
			same = same && slices.Equal(got[ds], nodes)
		}
		if same {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: daemon pods by set and node %v, want %v", limit, got, want)
		}
	}
}

// rollingUpdateOneNodeAtATime changes DaemonSet name's template and
// follows its pods with a watch until every node of nodes runs a ready
// pod of the new template and no old pod is left: at no moment may more
// than one node lack a ready pod that is not being deleted
// (maxUnavailable 1), and each node's new pod must be ready before the
// next node's old pod goes.
func rollingUpdateOneNodeAtATime(t *testing.T, cs kubernetes.Interface, kc, name string, nodes []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	list, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		t.Fatal(err)
	}
	pods := map[string]*corev1.Pod{}
	for i := range list.Items {
		pods[list.Items[i].Name] = &list.Items[i]
	}
	w, err := cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{LabelSelector: "app=" + name, ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	kubectl(t, kc, "patch", "daemonset", name, "--type=merge", "-p",
		`{"spec":{"template":{"metadata":{"annotations":{"rolled":"yes"}}}}}`)

	isNew := func(p *corev1.Pod) bool { return p.Annotations["rolled"] == "yes" }
	var order []string // the nodes in the order their new pod became ready
	maxDown := 0
	for {
		down, done := 0, true
		for _, node := range nodes {
			readyNew, readyAny, old := false, false, false
			for _, p := range pods {
				if p.Spec.NodeName != node {
					continue
				}
				ready := p.DeletionTimestamp == nil && podReady(p)
				readyAny = readyAny || ready
				readyNew = readyNew || (ready && isNew(p))
				old = old || !isNew(p)
			}
			if !readyAny {
				down++
			}
			if readyNew && !slices.Contains(order, node) {
				order = append(order, node)
			}
			done = done && readyNew && !old
		}
		if down > 1 && maxDown <= 1 {
			t.Errorf("%d nodes without a ready pod of daemonset %s at once, want at most 1 (maxUnavailable): %s", down, name, describePods(pods))
		}
		maxDown = max(maxDown, down)
		if done {
			break
		}
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("the pod watch ended before the rolling update did: %s", describePods(pods))
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				t.Fatalf("pod watch: %v event of %T", ev.Type, ev.Object)
			}
			if ev.Type == watch.Deleted {
				delete(pods, p.Name)
			} else {
				pods[p.Name] = p
			}
		case <-ctx.Done():
			t.Fatalf("the rolling update of daemonset %s did not finish: %s", name, describePods(pods))
		}
	}
	if maxDown != 1 || len(order) != len(nodes) {
		t.Errorf("rolling update: at most %d nodes down at once, nodes replaced in order %v; want 1 down at a time over %v", maxDown, order, nodes)
	}
	t.Logf("daemonset %s rolled over nodes in order %v", name, order)
	kubectl(t, kc, "rollout", "status", "daemonset/"+name, "--timeout=60s")
	var ds *appsv1.DaemonSet
	if ds, err = cs.AppsV1().DaemonSets("default").Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if ds.Status.UpdatedNumberScheduled != int32(len(nodes)) {
		t.Errorf("daemonset %s updatedNumberScheduled %d, want %d", name, ds.Status.UpdatedNumberScheduled, len(nodes))
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// describePods is one line per pod: name, node, new or old, ready, deleting.
func describePods(pods map[string]*corev1.Pod) string {
	var b strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&b, "\n  %s node=%s rolled=%s ready=%t deleting=%t", p.Name, p.Spec.NodeName, p.Annotations["rolled"], podReady(p), p.DeletionTimestamp != nil)
	}
	return b.String()
}
