package storage

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestStaticBinding binds claims to existing volumes through the API, as
// upstream's binder: each case has a class of its own (no StorageClass
// object: static binding only compares names), so cases never take each
// other's volumes.
func TestStaticBinding(t *testing.T) {
	ns := namespace(t)
	vol := func(name, size string, modify ...func(*v1.PersistentVolume)) *v1.PersistentVolume {
		p := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)},
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/tmp/" + name}},
		}}
		for _, m := range modify {
			m(p)
		}
		return p
	}
	labels := func(l map[string]string) func(*v1.PersistentVolume) {
		return func(p *v1.PersistentVolume) { p.Labels = l }
	}
	for i, tc := range []struct {
		name    string
		volumes []*v1.PersistentVolume
		claim   func(*v1.PersistentVolumeClaim)
		want    string // the volume, "" for none (the claim stays Pending)
	}{
		{name: "smallest fit", volumes: []*v1.PersistentVolume{vol("small", "500Mi"), vol("big", "10Gi"), vol("fit", "2Gi")}, want: "fit"},
		{name: "selector", volumes: []*v1.PersistentVolume{vol("plain", "1Gi"), vol("fast", "5Gi", labels(map[string]string{"speed": "fast"}))},
			claim: func(c *v1.PersistentVolumeClaim) {
				c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"speed": "fast"}}
			}, want: "fast"},
		{name: "access modes", volumes: []*v1.PersistentVolume{vol("rwo", "1Gi"), vol("rwx", "3Gi", func(p *v1.PersistentVolume) {
			p.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteMany}
		})}, claim: func(c *v1.PersistentVolumeClaim) {
			c.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteMany}
		}, want: "rwx"},
		{name: "claim names its volume", volumes: []*v1.PersistentVolume{vol("fit", "1Gi"), vol("named", "8Gi")},
			claim: func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeName = "named" }, want: "named"},
		{name: "volume names its claim", volumes: []*v1.PersistentVolume{vol("fit", "1Gi"), vol("prebound", "8Gi", func(p *v1.PersistentVolume) {
			p.Spec.ClaimRef = &v1.ObjectReference{Namespace: ns, Name: "claim-4"}
		})}, want: "prebound"},
		{name: "volume mode mismatch", volumes: []*v1.PersistentVolume{vol("fs", "1Gi")},
			claim: func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeMode = ptr.To(v1.PersistentVolumeBlock) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			class := fmt.Sprintf("static-%d", i)
			prefix := ns + "-" + class + "-"
			for _, pv := range tc.volumes {
				pv.Name = prefix + pv.Name
				pv.Spec.StorageClassName = class
				if _, err := cs.CoreV1().PersistentVolumes().Create(t.Context(), pv, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			// The binder must know every volume before the claim comes,
			// or it binds the best one it has seen so far (as upstream's).
			for _, pv := range tc.volumes {
				if pv.Spec.ClaimRef != nil {
					continue
				}
				eventually(t, "volume "+pv.Name+" Available", func(ctx context.Context) (*v1.PersistentVolume, error) {
					return cs.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
				}, func(got *v1.PersistentVolume, err error) bool {
					return err == nil && got.Status.Phase == v1.VolumeAvailable
				})
			}
			c := claim(fmt.Sprintf("claim-%d", i), &class, func(c *v1.PersistentVolumeClaim) {
				if tc.claim != nil {
					tc.claim(c)
				}
				if c.Spec.VolumeName != "" {
					c.Spec.VolumeName = prefix + c.Spec.VolumeName
				}
			})
			if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(t.Context(), c, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if err := shared.Controllers().WaitIdle(t.Context()); err != nil {
					t.Fatal(err)
				}
				got, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(t.Context(), c.Name, metav1.GetOptions{})
				if err != nil || got.Status.Phase != v1.ClaimPending || got.Spec.VolumeName != "" {
					t.Fatalf("claim %+v, %v; want it Pending without a volume", got, err)
				}
				return
			}
			bound := waitClaim(t, ns, c.Name)
			if bound.Spec.VolumeName != prefix+tc.want {
				t.Fatalf("bound to %s, want %s", bound.Spec.VolumeName, prefix+tc.want)
			}
			pv := eventually(t, "volume Bound", func(ctx context.Context) (*v1.PersistentVolume, error) {
				return cs.CoreV1().PersistentVolumes().Get(ctx, bound.Spec.VolumeName, metav1.GetOptions{})
			}, func(pv *v1.PersistentVolume, err error) bool { return err == nil && pv.Status.Phase == v1.VolumeBound })
			if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != bound.UID {
				t.Fatalf("volume's claimRef %+v, want the claim's uid %s", pv.Spec.ClaimRef, bound.UID)
			}
			if bound.Status.Capacity.Storage().Cmp(pv.Spec.Capacity[v1.ResourceStorage]) != 0 {
				t.Fatalf("claim capacity %v, want the volume's %v", bound.Status.Capacity, pv.Spec.Capacity)
			}
			// Released on the claim's deletion; Retain keeps it.
			if err := cs.CoreV1().PersistentVolumeClaims(ns).Delete(t.Context(), c.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually(t, "volume Released", func(ctx context.Context) (*v1.PersistentVolume, error) {
				return cs.CoreV1().PersistentVolumes().Get(ctx, bound.Spec.VolumeName, metav1.GetOptions{})
			}, func(pv *v1.PersistentVolume, err error) bool {
				return err == nil && pv.Status.Phase == v1.VolumeReleased
			})
		})
	}
}

// TestStatefulSetClaimsAreBound: a StatefulSet's volumeClaimTemplates
// give each pod a claim of the default class, provisioned on the pod's
// node and Bound, and the pods run.
func TestStatefulSetClaimsAreBound(t *testing.T) {
	ns := namespace(t)
	mnt := t.TempDir()
	tmpl := podUsing("", "", mnt+"/data", "sleep 3600", false)
	tmpl.Spec.RestartPolicy = v1.RestartPolicyAlways
	tmpl.Spec.Volumes = nil
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To(int32(2)), ServiceName: "web",
		Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template:             v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: tmpl.Spec},
		VolumeClaimTemplates: []v1.PersistentVolumeClaim{*claim("data", nil)},
	}}
	if _, err := cs.AppsV1().StatefulSets(ns).Create(t.Context(), set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, i := range []string{"0", "1"} {
		waitPod(t, ns, "web-"+i, v1.PodRunning)
		c := waitClaim(t, ns, "data-web-"+i)
		if c.Annotations["volume.kubernetes.io/selected-node"] != nodeName {
			t.Fatalf("claim %s: selected-node %q, want %q", c.Name, c.Annotations["volume.kubernetes.io/selected-node"], nodeName)
		}
	}
	if err := cs.AppsV1().StatefulSets(ns).Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, i := range []string{"0", "1"} {
		if err := cs.CoreV1().Pods(ns).Delete(t.Context(), "web-"+i, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
