package scheduler

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/apis/storage/localpath"
)

// volumeWorld is a cluster's claims, volumes and classes for the filter.
func volumeWorld(claims []*v1.PersistentVolumeClaim, volumes []*v1.PersistentVolume) *Volumes {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	immediate := storagev1.VolumeBindingImmediate
	classes := map[string]*storagev1.StorageClass{
		"local-path": localpath.StorageClass(),
		"static":     {ObjectMeta: metav1.ObjectMeta{Name: "static"}, Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &wffc},
		"fast":       {ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "example.com/fast", VolumeBindingMode: &immediate},
	}
	return &Volumes{
		Claim: func(ns, name string) (*v1.PersistentVolumeClaim, bool) {
			for _, c := range claims {
				if c.Namespace == ns && c.Name == name {
					return c, true
				}
			}
			return nil, false
		},
		Volumes: volumes,
		Class: func(name string) (*storagev1.StorageClass, bool) {
			c, ok := classes[name]
			return c, ok
		},
	}
}

func claimOf(name, class, volumeName string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-x" + name[:1])},
		Spec: v1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(class), VolumeName: volumeName,
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}}
}

// onNode is a volume pinned to hostname's node.
func onNode(name, class, hostname string) *v1.PersistentVolume {
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{StorageClassName: class, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpIn, Values: []string{hostname}}}}}}}},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeAvailable}}
}

func usesClaim(name string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
	}
}

func TestScheduleWithVolumes(t *testing.T) {
	withDir := func(n *v1.Node) { n.Annotations = map[string]string{localpath.DirAnnotation: "/var/lib/kite/storage"} }
	nodes := func() []*NodeInfo {
		return []*NodeInfo{{Node: node("a", "4", "8Gi", 110)}, {Node: node("b", "4", "8Gi", 110, withDir)}}
	}
	bound := onNode("pv-a", "static", "a")
	bound.Spec.ClaimRef = &v1.ObjectReference{Namespace: "default", Name: "bound", UID: "uid-xb"}
	for _, tc := range []struct {
		name      string
		pod       *v1.Pod
		world     *Volumes
		want      string
		message   string
		bind      string // the volume the plan binds
		provision string // the claim the plan provisions
	}{
		{name: "a claim that does not exist refuses the pod", pod: pod("p", nil, usesClaim("missing")), world: volumeWorld(nil, nil),
			message: `0/2 nodes are available: persistentvolumeclaim "missing" not found. no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.`},
		{name: "an unbound Immediate claim makes the pod wait for the binder", pod: pod("p", nil, usesClaim("fast")),
			world:   volumeWorld([]*v1.PersistentVolumeClaim{claimOf("fast", "fast", "")}, nil),
			message: `0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims. no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.`},
		{name: "a bound claim's volume pins the pod to its node", pod: pod("p", nil, usesClaim("bound")),
			world: volumeWorld([]*v1.PersistentVolumeClaim{claimOf("bound", "static", "pv-a")}, []*v1.PersistentVolume{bound}), want: "a"},
		{name: "a bound claim whose volume is gone fits nowhere", pod: pod("p", nil, usesClaim("bound")),
			world:   volumeWorld([]*v1.PersistentVolumeClaim{claimOf("bound", "static", "pv-gone")}, nil),
			message: `0/2 nodes are available: 2 node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s). no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.`},
		{name: "a waiting claim takes the static volume of the node it can reach", pod: pod("p", nil, usesClaim("wait")),
			world: volumeWorld([]*v1.PersistentVolumeClaim{claimOf("wait", "static", "")}, []*v1.PersistentVolume{onNode("pv-b", "static", "b")}),
			want:  "b", bind: "pv-b"},
		{name: "a waiting claim of a class without provisioner and no volume fits nowhere", pod: pod("p", nil, usesClaim("wait")),
			world:   volumeWorld([]*v1.PersistentVolumeClaim{claimOf("wait", "static", "")}, nil),
			message: `0/2 nodes are available: 2 node(s) didn't find available persistent volumes to bind. no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.`},
		{name: "a local-path claim is provisioned on a node whose agent has a directory", pod: pod("p", nil, usesClaim("local")),
			world: volumeWorld([]*v1.PersistentVolumeClaim{claimOf("local", "local-path", "")}, nil),
			want:  "b", provision: "local"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, plan, err := ScheduleWithVolumes(tc.pod, nodes(), nil, tc.world)
			if tc.message != "" {
				if err == nil || err.Error() != tc.message {
					t.Fatalf("error %v\nwant %s", err, tc.message)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("node %q (%v), want %q", got, err, tc.want)
			}
			var bind, provision string
			if plan != nil && len(plan.Bind) > 0 {
				bind = plan.Bind[0].Name
				if ref := plan.Bind[0].Spec.ClaimRef; ref == nil || ref.Name != "wait" {
					t.Fatalf("the plan's volume has claimRef %+v, want the claim", ref)
				}
			}
			if plan != nil && len(plan.Provision) > 0 {
				provision = plan.Provision[0].Name
			}
			if bind != tc.bind || provision != tc.provision {
				t.Fatalf("plan binds %q provisions %q, want %q %q", bind, provision, tc.bind, tc.provision)
			}
		})
	}
}
