package localpath

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/apis/storage/localpath"
	"github.com/kite-project/kite/controllers/volume"
)

func claim(ann map[string]string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "ns", UID: "1234", Annotations: ann},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
			StorageClassName: ptr.To(localpath.StorageClassName),
		},
	}
}

func node(name, dir string, unschedulable bool) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name + "-host"}}}
	if dir != "" {
		n.Annotations = map[string]string{localpath.DirAnnotation: dir}
	}
	n.Spec.Unschedulable = unschedulable
	return n
}

func TestWants(t *testing.T) {
	ours := localpath.StorageClass()
	other := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Provisioner: "example.com/other"}
	handed := map[string]string{volume.AnnStorageProvisioner: localpath.ProvisionerName}
	for _, tc := range []struct {
		name  string
		claim *v1.PersistentVolumeClaim
		class *storagev1.StorageClass
		want  bool
	}{
		{"a claim the binder handed over is provisioned", claim(handed), ours, true},
		{"a claim not handed over waits", claim(nil), ours, false},
		{"a claim of another provisioner's class is not ours", claim(handed), other, false},
		{"a claim whose class is gone is not provisioned", claim(handed), nil, false},
		{"a claim with a volume is done", func() *v1.PersistentVolumeClaim { c := claim(handed); c.Spec.VolumeName = "v"; return c }(), ours, false},
		{"a claim being deleted is not provisioned", func() *v1.PersistentVolumeClaim {
			c := claim(handed)
			c.DeletionTimestamp = &metav1.Time{}
			return c
		}(), ours, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Wants(tc.claim, tc.class); got != tc.want {
				t.Fatalf("Wants = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNodeAndVolume(t *testing.T) {
	nodes := []*v1.Node{node("b", "/b/storage", false), node("a", "", false), node("c", "/c/storage", true), node("d", "/d/storage", false)}
	for _, tc := range []struct {
		name     string
		ann      map[string]string
		wantNode string
		wantPath string
		wantErr  string
	}{
		{name: "the scheduler's node is the volume's", ann: map[string]string{volume.AnnSelectedNode: "d"}, wantNode: "d", wantPath: "/d/storage/pvc-1234"},
		{name: "an Immediate claim goes to the first schedulable node with a directory", wantNode: "b", wantPath: "/b/storage/pvc-1234"},
		{name: "a selected node that is gone is an error", ann: map[string]string{volume.AnnSelectedNode: "x"}, wantErr: `node "x" not found`},
		{name: "a selected node without a directory is an error", ann: map[string]string{volume.AnnSelectedNode: "a"}, wantNode: "a", wantErr: "annotation " + localpath.DirAnnotation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := claim(tc.ann)
			n, err := Node(c, nodes)
			if err == nil {
				if n.Name != tc.wantNode {
					t.Fatalf("node %s, want %s", n.Name, tc.wantNode)
				}
				var pv *v1.PersistentVolume
				if pv, err = Volume(c, localpath.StorageClass(), n); err == nil {
					if pv.Name != "pvc-1234" || pv.Spec.HostPath == nil || pv.Spec.HostPath.Path != tc.wantPath {
						t.Fatalf("volume %s at %+v, want pvc-1234 at %s", pv.Name, pv.Spec.HostPath, tc.wantPath)
					}
					if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != c.UID || pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete ||
						pv.Annotations[volume.AnnDynamicallyProvisioned] != localpath.ProvisionerName {
						t.Fatalf("volume %+v is not pre-bound to the claim with Delete and its provisioner", pv)
					}
					term := pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0]
					if term.Key != "kubernetes.io/hostname" || term.Values[0] != tc.wantNode+"-host" {
						t.Fatalf("node affinity %+v, want the node's hostname label", term)
					}
				}
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestDeletes(t *testing.T) {
	pv := func(by string, policy v1.PersistentVolumeReclaimPolicy, phase v1.PersistentVolumePhase) *v1.PersistentVolume {
		return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "v", Annotations: map[string]string{volume.AnnDynamicallyProvisioned: by}},
			Spec: v1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: policy}, Status: v1.PersistentVolumeStatus{Phase: phase}}
	}
	for _, tc := range []struct {
		name string
		pv   *v1.PersistentVolume
		want bool
	}{
		{"our released volume of Delete goes", pv(localpath.ProvisionerName, v1.PersistentVolumeReclaimDelete, v1.VolumeReleased), true},
		{"a bound one stays", pv(localpath.ProvisionerName, v1.PersistentVolumeReclaimDelete, v1.VolumeBound), false},
		{"one of Retain stays", pv(localpath.ProvisionerName, v1.PersistentVolumeReclaimRetain, v1.VolumeReleased), false},
		{"another provisioner's stays", pv("example.com/x", v1.PersistentVolumeReclaimDelete, v1.VolumeReleased), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Deletes(tc.pv); got != tc.want {
				t.Fatalf("Deletes = %v, want %v", got, tc.want)
			}
		})
	}
}
