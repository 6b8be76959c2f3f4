package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite/agent/kubetypes"
)

// Pods bound to the node, by spec.nodeName at creation or through the
// binding subresource, arrive as ADD from the api source; unbound pods and
// other nodes' do not; a graceful delete is a DELETE, the end of the pod a
// REMOVE.
func TestAPIPodsBoundToTheNodeArrive(t *testing.T) {
	node := unique("api-node")
	cfg := shared.RESTConfig()
	cs := clientset(t, cfg)
	ctx := t.Context()
	ns := createNamespace(t, cs, "api")
	a, c := startAgent(t, Options{NodeName: node, RESTConfig: cfg})
	c.wait(0, kubetypes.ADD, kubetypes.APISource, "")
	if !a.SeenAllSources() {
		t.Fatal("the api source reported but SeenAllSources is false")
	}

	pods := cs.CoreV1().Pods(ns)
	for _, p := range []*v1.Pod{newPod(ns, "api-mine", node), newPod(ns, "api-theirs", "other-node"), newPod(ns, "api-unbound", "")} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c.wait(0, kubetypes.ADD, kubetypes.APISource, ns+"/api-mine")
	binding := &v1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api-unbound"}, Target: v1.ObjectReference{Kind: "Node", Name: node}}
	if err := pods.Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.wait(0, kubetypes.ADD, kubetypes.APISource, ns+"/api-unbound")

	if err := pods.Delete(ctx, "api-mine", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p, _ := c.wait(0, kubetypes.DELETE, kubetypes.APISource, ns+"/api-mine")
	if p.DeletionTimestamp == nil {
		t.Fatal("DELETE of a pod without deletionTimestamp")
	}
	zero := int64(0)
	if err := pods.Delete(ctx, "api-mine", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	c.wait(0, kubetypes.REMOVE, kubetypes.APISource, ns+"/api-mine")
	c.none("another node's pod arrived", func(_ kubetypes.PodUpdate, p *v1.Pod) bool { return p.Name == "api-theirs" })
}

// A static pod gets a mirror pod in the API server, which the consumer
// never sees; a mirror deleted through the API is created again and the
// static pod is not stopped; an edited manifest replaces the mirror; a
// removed manifest deletes it.
func TestStaticPodsHaveMirrorPods(t *testing.T) {
	node := unique("mirror-node")
	cfg := shared.RESTConfig()
	cs := clientset(t, cfg)
	ctx := t.Context()
	nodeObj := createNode(t, cs, node)
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	writeAtomic(t, path, manifest("web", "image:1"))
	_, c := startAgent(t, Options{NodeName: node, RESTConfig: cfg, StaticPodPath: dir})

	name := "web-" + node
	static, _ := c.wait(0, kubetypes.ADD, kubetypes.FileSource, "default/"+name)
	hash := static.Annotations[kubetypes.ConfigHashAnnotationKey]
	m := waitAPIPod(t, cs, "default", name, "mirror created", func(p *v1.Pod) bool {
		return p != nil && p.Annotations[kubetypes.ConfigMirrorAnnotationKey] == hash
	})
	if len(m.OwnerReferences) != 1 || m.OwnerReferences[0].Kind != "Node" || m.OwnerReferences[0].UID != nodeObj.UID ||
		m.OwnerReferences[0].Controller == nil || !*m.OwnerReferences[0].Controller {
		t.Fatalf("mirror ownerReferences = %+v, want the Node %s as controller", m.OwnerReferences, nodeObj.UID)
	}
	// The agent writes with the kubelet's user agent, so the mirror's
	// field manager is upstream's "kubelet".
	if len(m.ManagedFields) == 0 || m.ManagedFields[0].Manager != "kubelet" {
		t.Fatalf("mirror managedFields = %+v, want the manager kubelet", m.ManagedFields)
	}

	// kubectl delete pod on the mirror: recreated, static pod untouched.
	if err := cs.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	m2 := waitAPIPod(t, cs, "default", name, "deleted mirror recreated", func(p *v1.Pod) bool {
		return p != nil && p.UID != m.UID && p.DeletionTimestamp == nil && p.Annotations[kubetypes.ConfigMirrorAnnotationKey] == hash
	})
	c.none("the static pod stopped because its mirror was deleted", func(u kubetypes.PodUpdate, p *v1.Pod) bool {
		return (u.Op == kubetypes.REMOVE || u.Op == kubetypes.DELETE) && p.Name == name
	})

	// Edited manifest: new static pod (REMOVE + ADD), mirror replaced.
	mark := len(c.all())
	writeAtomic(t, path, manifest("web", "image:2"))
	static2, _ := c.wait(mark, kubetypes.ADD, kubetypes.FileSource, "default/"+name)
	hash2 := static2.Annotations[kubetypes.ConfigHashAnnotationKey]
	if hash2 == hash {
		t.Fatal("edited manifest kept its hash")
	}
	waitAPIPod(t, cs, "default", name, "outdated mirror replaced", func(p *v1.Pod) bool {
		return p != nil && p.UID != m2.UID && p.Annotations[kubetypes.ConfigMirrorAnnotationKey] == hash2
	})

	// Removed manifest: the static pod goes, and so does its mirror.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	c.wait(mark, kubetypes.REMOVE, kubetypes.FileSource, "default/"+name)
	waitAPIPod(t, cs, "default", name, "mirror of a removed static pod deleted", func(p *v1.Pod) bool { return p == nil })

	c.none("a mirror pod reached the consumer", func(_ kubetypes.PodUpdate, p *v1.Pod) bool { return kubetypes.IsMirrorPod(p) })
}

// Without a REST config the agent runs static pods alone.
func TestStandaloneAgentRunsStaticPods(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "solo.yaml"), manifest("solo", "image"))
	a, c := startAgent(t, Options{NodeName: "solo-node", StaticPodPath: dir})
	c.wait(0, kubetypes.ADD, kubetypes.FileSource, "default/solo-solo-node")
	if !a.SeenAllSources() || a.Seen(kubetypes.APISource) {
		t.Fatalf("standalone: SeenAllSources %v, Seen(api) %v; want true, false", a.SeenAllSources(), a.Seen(kubetypes.APISource))
	}
}

// An agent started again finds the mirror pods of its last run: the mirror
// of a static pod that did not change is left alone, and the mirror of a
// static pod removed meanwhile is deleted once the file source reported.
func TestRestartedAgentKeepsMirrorsAndDeletesOrphans(t *testing.T) {
	node := unique("again-node")
	cfg := shared.RESTConfig()
	cs := clientset(t, cfg)
	createNode(t, cs, node)
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "a-kept.yaml"), manifest("a-kept", "image"))
	writeAtomic(t, filepath.Join(dir, "z-gone.yaml"), manifest("z-gone", "image"))
	// The reconciler works in name order: any (wrong) replacement of the
	// kept mirror would come before the orphan's deletion that the test
	// waits for.
	isMirror := func(p *v1.Pod) bool { return p != nil && kubetypes.IsMirrorPod(p) }

	_, first := startAgent(t, Options{NodeName: node, RESTConfig: cfg, StaticPodPath: dir})
	kept := waitAPIPod(t, cs, "default", "a-kept-"+node, "mirror of kept", isMirror)
	waitAPIPod(t, cs, "default", "z-gone-"+node, "mirror of gone", isMirror)
	first.stop()

	if err := os.Remove(filepath.Join(dir, "z-gone.yaml")); err != nil {
		t.Fatal(err)
	}
	_, second := startAgent(t, Options{NodeName: node, RESTConfig: cfg, StaticPodPath: dir})
	second.wait(0, kubetypes.ADD, kubetypes.FileSource, "default/a-kept-"+node)
	waitAPIPod(t, cs, "default", "z-gone-"+node, "orphaned mirror deleted", func(p *v1.Pod) bool { return p == nil })
	after, err := cs.CoreV1().Pods("default").Get(t.Context(), "a-kept-"+node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.UID != kept.UID {
		t.Fatalf("mirror of an unchanged static pod replaced by the restarted agent (uid %s → %s)", kept.UID, after.UID)
	}
}

// A manifest that does not parse is reported as a Warning event on the
// Node (what `kubectl describe node` shows), and the good manifest beside
// it still runs.
func TestBadManifestIsAWarningEventOnTheNode(t *testing.T) {
	node := unique("events-node")
	cfg := shared.RESTConfig()
	cs := clientset(t, cfg)
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "good.yaml"), manifest("good", "image"))
	writeAtomic(t, filepath.Join(dir, "broken.yaml"), "apiVersion: v1\nkind: Pod\nmetadata: [not, a, map\n")
	_, c := startAgent(t, Options{NodeName: node, RESTConfig: cfg, StaticPodPath: dir})
	c.wait(0, kubetypes.ADD, kubetypes.FileSource, "default/good-"+node)

	sel := "involvedObject.kind=Node,involvedObject.name=" + node
	deadline := time.Now().Add(waitTimeout)
	for {
		list, err := cs.CoreV1().Events("default").List(t.Context(), metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range list.Items {
			if e.Type == v1.EventTypeWarning && e.Reason == kubetypes.ReasonFailedToParse && strings.Contains(e.Message, "broken.yaml") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no FailedToParse Warning event naming broken.yaml on node %s; events: %+v", node, list.Items)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A manifest with a typo after an agent restart: the static pod that ran
// from it keeps running (the restarted agent adds it with its UID, from
// the last good version kept under --root-dir, and its mirror stays), and
// a Warning event on the Node names the file.
func TestRestartedAgentKeepsStaticPodOfBadManifest(t *testing.T) {
	node := unique("typo-node")
	cfg := shared.RESTConfig()
	cs := clientset(t, cfg)
	createNode(t, cs, node)
	dir, root := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	writeAtomic(t, path, manifest("web", "image"))
	isMirror := func(p *v1.Pod) bool { return p != nil && kubetypes.IsMirrorPod(p) }

	_, first := startAgent(t, Options{NodeName: node, RESTConfig: cfg, StaticPodPath: dir, RootDir: root})
	running, _ := first.wait(0, kubetypes.ADD, kubetypes.FileSource, "default/web-"+node)
	mirror := waitAPIPod(t, cs, "default", "web-"+node, "mirror", isMirror)
	first.stop()

	writeAtomic(t, path, strings.Replace(manifest("web", "image"), "containers:", "containers", 1))
	_, second := startAgent(t, Options{NodeName: node, RESTConfig: cfg, StaticPodPath: dir, RootDir: root})
	kept, _ := second.wait(0, kubetypes.ADD, kubetypes.FileSource, "default/web-"+node)
	if kept.UID != running.UID {
		t.Fatalf("the restarted agent added UID %s, want the running pod's %s", kept.UID, running.UID)
	}
	sel := "involvedObject.kind=Node,involvedObject.name=" + node
	deadline := time.Now().Add(waitTimeout)
	for found := false; !found; {
		list, err := cs.CoreV1().Events("default").List(t.Context(), metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range list.Items {
			found = found || e.Type == v1.EventTypeWarning && strings.Contains(e.Message, path) && strings.Contains(e.Message, "keeping pod")
		}
		if !found && time.Now().After(deadline) {
			t.Fatalf("no Warning event naming %s on node %s; events: %+v", path, node, list.Items)
		}
		time.Sleep(50 * time.Millisecond)
	}
	second.none("the kept pod removed", func(u kubetypes.PodUpdate, p *v1.Pod) bool {
		return (u.Op == kubetypes.REMOVE || u.Op == kubetypes.DELETE) && p.UID == running.UID
	})
	after, err := cs.CoreV1().Pods("default").Get(t.Context(), "web-"+node, metav1.GetOptions{})
	if err != nil || after.UID != mirror.UID {
		t.Fatalf("the mirror of the kept static pod was replaced or deleted (err %v)", err)
	}
}
