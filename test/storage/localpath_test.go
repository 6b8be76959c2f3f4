package storage

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite/apis/storage/localpath"
)

// TestLocalPathVolumeLivesWithItsClaim is the default class's story on a
// real agent: a claim without a class gets local-path (and the
// pvc-protection finalizer) and waits for its first consumer; a pod using
// it is scheduled, the claim gets the pod's node, a volume is provisioned
// there (a directory under the agent's root, pinned to the node) and both
// are Bound; the pod's file is there for the next pod; a read-only mount
// refuses writes; deleting the claim waits for the pods that use it, then
// the volume is deleted and its directory removed by the agent.
func TestLocalPathVolumeLivesWithItsClaim(t *testing.T) {
	ns := namespace(t)
	pvcs := cs.CoreV1().PersistentVolumeClaims(ns)
	pods := cs.CoreV1().Pods(ns)
	created, err := pvcs.Create(t.Context(), claim("data", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := created.Spec.StorageClassName; c == nil || *c != localpath.StorageClassName {
		t.Fatalf("storageClassName %v, want the default %s", c, localpath.StorageClassName)
	}
	if !slices.Contains(created.Finalizers, "kubernetes.io/pvc-protection") {
		t.Fatalf("finalizers %v, want kubernetes.io/pvc-protection", created.Finalizers)
	}
	eventually(t, "WaitForFirstConsumer event", func(context.Context) ([]string, error) {
		return events(t, ns, created.UID, "WaitForFirstConsumer"), nil
	}, func(ev []string, _ error) bool { return len(ev) > 0 })

	mnt := filepath.Join(t.TempDir(), "mnt")
	if _, err := pods.Create(t.Context(), podUsing("writer", "data", mnt, "echo hello > "+mnt+"/file", false), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "writer", v1.PodSucceeded)
	bound := waitClaim(t, ns, "data")
	if got := bound.Annotations["volume.kubernetes.io/selected-node"]; got != nodeName {
		t.Fatalf("selected-node %q, want %q", got, nodeName)
	}
	if bound.Annotations["pv.kubernetes.io/bind-completed"] != "yes" || bound.Annotations["volume.kubernetes.io/storage-provisioner"] != localpath.ProvisionerName {
		t.Fatalf("annotations %v, want bind-completed and the storage-provisioner", bound.Annotations)
	}
	pv, err := cs.CoreV1().PersistentVolumes().Get(t.Context(), bound.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(rootDir, localpath.DirName, "pvc-"+string(created.UID))
	if pv.Name != "pvc-"+string(created.UID) || pv.Status.Phase != v1.VolumeBound || pv.Spec.HostPath == nil || pv.Spec.HostPath.Path != dir ||
		pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete || !slices.Contains(pv.Finalizers, "kubernetes.io/pv-protection") {
		t.Fatalf("volume %s: %+v %+v, want pvc-<claim uid>, Bound, hostPath %s, Delete, pv-protection", pv.Name, pv.Spec, pv.Status, dir)
	}
	if term := pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0]; term.Values[0] != nodeName {
		t.Fatalf("node affinity %+v, want the node", term)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "file")); err != nil || string(b) != "hello\n" {
		t.Fatalf("the pod's file on the node: %q, %v", b, err)
	}

	// A pod made after the first finds its file.
	if _, err := pods.Create(t.Context(), podUsing("reader", "data", mnt, `test "$(cat `+mnt+`/file)" = hello`, false), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "reader", v1.PodSucceeded)
	// persistentVolumeClaim.readOnly makes the mount read-only.
	if _, err := pods.Create(t.Context(), podUsing("read-only", "data", mnt, "touch "+mnt+"/other", true), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "read-only", v1.PodFailed)
	if _, err := os.Stat(filepath.Join(dir, "other")); !os.IsNotExist(err) {
		t.Fatalf("a read-only pod wrote to its volume: %v", err)
	}

	// The claim outlives its deletion while pods use it.
	if _, err := pods.Create(t.Context(), podUsing("holder", "data", mnt, "sleep 3600", false), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "holder", v1.PodRunning)
	if err := pvcs.Delete(t.Context(), "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := shared.Controllers().WaitIdle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if c, err := pvcs.Get(t.Context(), "data", metav1.GetOptions{}); err != nil || c.DeletionTimestamp == nil {
		t.Fatalf("claim used by a pod: %v, %v; want it kept, being deleted", c, err)
	}
	for _, name := range []string{"writer", "reader", "read-only", "holder"} {
		if err := pods.Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "claim gone", func(ctx context.Context) (*v1.PersistentVolumeClaim, error) {
		return pvcs.Get(ctx, "data", metav1.GetOptions{})
	}, gone)
	eventually(t, "volume gone", func(ctx context.Context) (*v1.PersistentVolume, error) {
		return cs.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
	}, gone)
	eventually(t, "directory removed", func(context.Context) (os.FileInfo, error) { return os.Stat(dir) },
		func(_ os.FileInfo, err error) bool { return os.IsNotExist(err) })
}

// TestClaimNotBoundKeepsPodWaiting: a pod bound to the node whose claim
// cannot be bound stays ContainerCreating, with a FailedMount event that
// says so, until the claim is Bound.
func TestClaimNotBoundKeepsPodWaiting(t *testing.T) {
	ns := namespace(t)
	// A claim of a class nothing provisions, naming a volume not there.
	none := "none"
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(t.Context(), claim("later", &none, func(c *v1.PersistentVolumeClaim) {
		c.Spec.VolumeName = "later-" + ns
	}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(t.TempDir(), "mnt")
	p := podUsing("waits", "later", mnt, "sleep 3600", false)
	p.Spec.NodeName = nodeName // placed already, as a pod whose claim went Pending again
	p, err := cs.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "FailedMount event", func(context.Context) ([]string, error) { return events(t, ns, p.UID, "FailedMount"), nil },
		func(ev []string, _ error) bool {
			return slices.ContainsFunc(ev, func(m string) bool { return contains(m, "error processing PVC "+ns+"/later: PVC is not bound") })
		})
	if got, _ := cs.CoreV1().Pods(ns).Get(t.Context(), "waits", metav1.GetOptions{}); got.Status.Phase != v1.PodPending {
		t.Fatalf("pod phase %s, want Pending", got.Status.Phase)
	}
	// The volume appears: the claim binds and the pod starts.
	hostDir := t.TempDir()
	if _, err := cs.CoreV1().PersistentVolumes().Create(t.Context(), &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "later-" + ns},
		Spec: v1.PersistentVolumeSpec{
			Capacity: v1.ResourceList{v1.ResourceStorage: resourceQuantity("1Gi")}, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName: none, PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: hostDir}},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
				{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{nodeName}}}}}}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitClaim(t, ns, "later")
	waitPod(t, ns, "waits", v1.PodRunning)
	if err := cs.CoreV1().Pods(ns).Delete(t.Context(), "waits", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}
