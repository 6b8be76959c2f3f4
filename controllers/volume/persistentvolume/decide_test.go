package persistentvolume

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/controllers/volume"
)

func pv(name, size string, modify ...func(*v1.PersistentVolume)) *v1.PersistentVolume {
	p := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)},
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeAvailable},
	}
	for _, m := range modify {
		m(p)
	}
	return p
}

func pvc(name, size string, modify ...func(*v1.PersistentVolumeClaim)) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}},
			StorageClassName: ptr.To(""),
		},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending},
	}
	for _, m := range modify {
		m(c)
	}
	return c
}

func class(name, provisioner string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode}
}

func boundTo(claim string, uid string) func(*v1.PersistentVolume) {
	return func(p *v1.PersistentVolume) {
		p.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: claim, UID: typesUID(uid)}
	}
}

func classOf(name string) func(*v1.PersistentVolumeClaim) {
	return func(c *v1.PersistentVolumeClaim) { c.Spec.StorageClassName = ptr.To(name) }
}

func completed(volumeName string) func(*v1.PersistentVolumeClaim) {
	return func(c *v1.PersistentVolumeClaim) {
		c.Spec.VolumeName = volumeName
		c.Annotations = map[string]string{volume.AnnBindCompleted: "yes"}
		c.Status.Phase = v1.ClaimBound
	}
}

func TestDecideClaim(t *testing.T) {
	rwx := func(p *v1.PersistentVolume) {
		p.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce, v1.ReadWriteMany}
	}
	labelled := func(p *v1.PersistentVolume) { p.Labels = map[string]string{"tier": "fast"} }
	for _, tc := range []struct {
		name      string
		claim     *v1.PersistentVolumeClaim
		in        ClaimInputs
		step      ClaimStep
		phase     v1.PersistentVolumeClaimPhase
		volume    string
		reason    string
		message   string
		wantError bool
	}{
		{name: "the smallest volume that fits is bound", claim: pvc("c", "5Gi"),
			in:   ClaimInputs{Volumes: []*v1.PersistentVolume{pv("big", "100Gi"), pv("small", "1Gi"), pv("fit", "10Gi"), pv("fit2", "20Gi")}},
			step: ClaimBind, volume: "fit"},
		{name: "a volume with fewer extra access modes wins over a smaller one", claim: pvc("c", "1Gi"),
			in:   ClaimInputs{Volumes: []*v1.PersistentVolume{pv("rwx-small", "1Gi", rwx), pv("rwo-big", "5Gi")}},
			step: ClaimBind, volume: "rwo-big"},
		{name: "a volume without every access mode asked for is not bound", claim: pvc("c", "1Gi", func(c *v1.PersistentVolumeClaim) {
			c.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteMany}
		}),
			in:   ClaimInputs{Volumes: []*v1.PersistentVolume{pv("rwo", "5Gi"), pv("rwx", "50Gi", rwx)}},
			step: ClaimBind, volume: "rwx"},
		{name: "the class must match", claim: pvc("c", "1Gi", classOf("gold")),
			in:   ClaimInputs{Volumes: []*v1.PersistentVolume{pv("none", "1Gi"), pv("gold", "2Gi", func(p *v1.PersistentVolume) { p.Spec.StorageClassName = "gold" })}, Class: class("gold", "kubernetes.io/no-provisioner", storagev1.VolumeBindingImmediate)},
			step: ClaimBind, volume: "gold"},
		{name: "the selector must match", claim: pvc("c", "1Gi", func(c *v1.PersistentVolumeClaim) {
			c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "fast"}}
		}),
			in:   ClaimInputs{Volumes: []*v1.PersistentVolume{pv("plain", "1Gi"), pv("fast", "9Gi", labelled)}},
			step: ClaimBind, volume: "fast"},
		{name: "the volumeMode must match", claim: pvc("c", "1Gi", func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeMode = ptr.To(v1.PersistentVolumeBlock) }),
			in:   ClaimInputs{Volumes: []*v1.PersistentVolume{pv("fs", "1Gi")}},
			step: ClaimPhase, phase: v1.ClaimPending, reason: volume.EventFailedBinding, message: "no persistent volumes available for this claim and no storage class is set"},
		{name: "a volume that is not Available is not bound", claim: pvc("c", "1Gi"),
			in:   ClaimInputs{Volumes: []*v1.PersistentVolume{pv("released", "1Gi", func(p *v1.PersistentVolume) { p.Status.Phase = v1.VolumeReleased })}},
			step: ClaimPhase, phase: v1.ClaimPending, reason: volume.EventFailedBinding},
		{name: "a volume pre-bound to the claim is bound whatever its size", claim: pvc("c", "1Gi"),
			in:   ClaimInputs{Volumes: []*v1.PersistentVolume{pv("fit", "1Gi"), pv("mine", "9Gi", boundTo("c", ""))}},
			step: ClaimBind, volume: "mine"},
		{name: "a volume pre-bound to another claim is not bound", claim: pvc("c", "1Gi"),
			in:   ClaimInputs{Volumes: []*v1.PersistentVolume{pv("theirs", "9Gi", boundTo("other", ""))}},
			step: ClaimPhase, phase: v1.ClaimPending, reason: volume.EventFailedBinding},
		{name: "a claim naming a free volume that fits binds it", claim: pvc("c", "1Gi", func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeName = "named" }),
			in:   ClaimInputs{Volumes: []*v1.PersistentVolume{pv("fit", "1Gi"), pv("named", "2Gi")}},
			step: ClaimBind, volume: "named"},
		{name: "a claim naming a volume too small waits with VolumeMismatch", claim: pvc("c", "5Gi", func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeName = "named" }),
			in:   ClaimInputs{Volumes: []*v1.PersistentVolume{pv("named", "2Gi")}},
			step: ClaimPhase, phase: v1.ClaimPending, reason: volume.EventVolumeMismatch, message: `Cannot bind to requested volume "named": requested PV is too small`},
		{name: "a claim naming a missing volume waits", claim: pvc("c", "1Gi", func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeName = "later" }),
			step: ClaimPhase, phase: v1.ClaimPending},
		{name: "a claim naming a volume another claim has waits", claim: pvc("c", "1Gi", func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeName = "taken" }),
			in:   ClaimInputs{Volumes: []*v1.PersistentVolume{pv("taken", "1Gi", boundTo("other", "uid-other"))}},
			step: ClaimPhase, phase: v1.ClaimPending, reason: volume.EventFailedBinding, message: `volume "taken" already bound to a different claim.`},
		{name: "a claim of a WaitForFirstConsumer class waits for its pod", claim: pvc("c", "1Gi", classOf("local")),
			in:   ClaimInputs{Class: class("local", "kite.io/local-path", storagev1.VolumeBindingWaitForFirstConsumer), UnscheduledPods: []string{"p"}},
			step: ClaimPhase, phase: v1.ClaimPending, reason: volume.EventWaitForPodScheduled, message: "waiting for pod p to be scheduled"},
		{name: "a WaitForFirstConsumer claim without pods waits for its first consumer", claim: pvc("c", "1Gi", classOf("local")),
			in:   ClaimInputs{Class: class("local", "kite.io/local-path", storagev1.VolumeBindingWaitForFirstConsumer)},
			step: ClaimPhase, phase: v1.ClaimPending, reason: volume.EventWaitForFirstConsumer},
		{name: "a WaitForFirstConsumer claim leaves Available volumes to the scheduler", claim: pvc("c", "1Gi", classOf("local")),
			in: ClaimInputs{Class: class("local", "kubernetes.io/no-provisioner", storagev1.VolumeBindingWaitForFirstConsumer),
				Volumes: []*v1.PersistentVolume{pv("free", "1Gi", func(p *v1.PersistentVolume) { p.Spec.StorageClassName = "local" })}},
			step: ClaimPhase, phase: v1.ClaimPending, reason: volume.EventWaitForFirstConsumer},
		{name: "a node selected hands the claim to the provisioner", claim: pvc("c", "1Gi", classOf("local"), func(c *v1.PersistentVolumeClaim) {
			c.Annotations = map[string]string{volume.AnnSelectedNode: "n1"}
		}),
			in:   ClaimInputs{Class: class("local", "kite.io/local-path", storagev1.VolumeBindingWaitForFirstConsumer)},
			step: ClaimProvision, reason: volume.EventExternalProvisioning},
		{name: "an Immediate claim is handed to the provisioner at once", claim: pvc("c", "1Gi", classOf("fast")),
			in:   ClaimInputs{Class: class("fast", "example.com/fast", storagev1.VolumeBindingImmediate)},
			step: ClaimProvision, reason: volume.EventExternalProvisioning},
		{name: "a class that does not exist fails provisioning", claim: pvc("c", "1Gi", classOf("gone")),
			step: ClaimNothing, reason: volume.EventProvisioningFailed, message: `storageclass.storage.k8s.io "gone" not found`},
		{name: "an in-tree provisioner is no plugin here", claim: pvc("c", "1Gi", classOf("static")),
			in:   ClaimInputs{Class: class("static", "kubernetes.io/no-provisioner", storagev1.VolumeBindingImmediate)},
			step: ClaimPhase, phase: v1.ClaimPending, reason: volume.EventProvisioningFailed, message: "no volume plugin matched name: kubernetes.io/no-provisioner"},
		{name: "a claim without a class gets the default one", claim: pvc("c", "1Gi", func(c *v1.PersistentVolumeClaim) { c.Spec.StorageClassName = nil }),
			in:   ClaimInputs{DefaultClass: "local-path"},
			step: ClaimSetClass},
		{name: "a bound claim stays bound", claim: pvc("c", "1Gi", completed("v")),
			in:   ClaimInputs{Volumes: []*v1.PersistentVolume{pv("v", "1Gi", boundTo("c", "uid-c"))}},
			step: ClaimBind, volume: "v"},
		{name: "a bound claim whose volume is gone is Lost", claim: pvc("c", "1Gi", completed("v")),
			step: ClaimPhase, phase: v1.ClaimLost, reason: "ClaimLost", message: "Bound claim has lost its PersistentVolume. Data on the volume is lost!"},
		{name: "a Lost claim stays Lost quietly", claim: pvc("c", "1Gi", completed("v"), func(c *v1.PersistentVolumeClaim) { c.Status.Phase = v1.ClaimLost }),
			step: ClaimNothing},
		{name: "a bound claim whose volume is bound to another is misbound", claim: pvc("c", "1Gi", completed("v")),
			in:   ClaimInputs{Volumes: []*v1.PersistentVolume{pv("v", "1Gi", boundTo("other", "uid-other"))}},
			step: ClaimPhase, phase: v1.ClaimLost, reason: "ClaimMisbound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := DecideClaim(tc.claim, tc.in)
			if (d.Err != nil) != tc.wantError {
				t.Fatalf("error %v, want error %v", d.Err, tc.wantError)
			}
			if d.Step != tc.step || d.Phase != tc.phase {
				t.Fatalf("step %v phase %q, want %v %q (%+v)", d.Step, d.Phase, tc.step, tc.phase, d)
			}
			if got := ""; d.Volume != nil || tc.volume != "" {
				if d.Volume != nil {
					got = d.Volume.Name
				}
				if got != tc.volume {
					t.Fatalf("volume %q, want %q", got, tc.volume)
				}
			}
			switch {
			case tc.reason == "" && d.Event != nil:
				t.Fatalf("event %+v, want none", d.Event)
			case tc.reason != "" && (d.Event == nil || d.Event.Reason != tc.reason):
				t.Fatalf("event %+v, want reason %s", d.Event, tc.reason)
			case tc.message != "" && !strings.Contains(d.Event.Message, tc.message):
				t.Fatalf("event message %q, want %q", d.Event.Message, tc.message)
			}
		})
	}
}

func TestDecideVolume(t *testing.T) {
	provisioned := func(policy v1.PersistentVolumeReclaimPolicy) func(*v1.PersistentVolume) {
		return func(p *v1.PersistentVolume) {
			p.Annotations = map[string]string{volume.AnnDynamicallyProvisioned: "kite.io/local-path"}
			p.Spec.PersistentVolumeReclaimPolicy = policy
		}
	}
	bound := func(p *v1.PersistentVolume) { p.Status.Phase = v1.VolumeBound }
	for _, tc := range []struct {
		name   string
		volume *v1.PersistentVolume
		claim  *v1.PersistentVolumeClaim
		step   VolumeStep
		phase  v1.PersistentVolumePhase
		reason string
	}{
		{name: "a new volume without a claim is Available", volume: pv("v", "1Gi", func(p *v1.PersistentVolume) { p.Status.Phase = v1.VolumePending }),
			step: VolumePhase, phase: v1.VolumeAvailable},
		{name: "an Available volume stays", volume: pv("v", "1Gi"), step: VolumeNothing},
		{name: "a volume pre-bound by name only is Available", volume: pv("v", "1Gi", boundTo("c", ""), func(p *v1.PersistentVolume) { p.Status.Phase = v1.VolumePending }),
			step: VolumePhase, phase: v1.VolumeAvailable},
		{name: "a volume its claim is bound to is Bound", volume: pv("v", "1Gi", boundTo("c", "uid-c")), claim: pvc("c", "1Gi", completed("v")),
			step: VolumePhase, phase: v1.VolumeBound},
		{name: "a volume whose claim is gone is Released (Retain keeps it)", volume: pv("v", "1Gi", boundTo("c", "uid-c"), bound),
			step: VolumePhase, phase: v1.VolumeReleased},
		{name: "a released volume of Retain stays Released", volume: pv("v", "1Gi", boundTo("c", "uid-c"), func(p *v1.PersistentVolume) { p.Status.Phase = v1.VolumeReleased }),
			step: VolumeNothing},
		{name: "a provisioned volume of Delete is Released for its provisioner", volume: pv("v", "1Gi", boundTo("c", "uid-c"), bound, provisioned(v1.PersistentVolumeReclaimDelete)),
			step: VolumePhase, phase: v1.VolumeReleased},
		{name: "a volume of Delete nobody provisioned fails", volume: pv("v", "1Gi", boundTo("c", "uid-c"), bound, func(p *v1.PersistentVolume) {
			p.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimDelete
		}),
			step: VolumePhase, phase: v1.VolumeFailed, reason: volume.EventVolumeFailedDelete},
		{name: "a volume of Recycle fails", volume: pv("v", "1Gi", boundTo("c", "uid-c"), bound, func(p *v1.PersistentVolume) {
			p.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRecycle
		}),
			step: VolumePhase, phase: v1.VolumeFailed, reason: volume.EventVolumeFailedRecycle},
		{name: "a volume pre-bound to a claim not yet bound syncs the claim", volume: pv("v", "1Gi", boundTo("c", "uid-c")), claim: pvc("c", "1Gi"),
			step: VolumeSyncClaim},
		{name: "a volume whose claim is bound elsewhere is unbound", volume: pv("v", "1Gi", boundTo("c", "uid-c"), bound), claim: pvc("c", "1Gi", completed("other")),
			step: VolumeUnbind},
		{name: "a provisioned volume of Delete whose claim is bound elsewhere is released", volume: pv("v", "1Gi", boundTo("c", "uid-c"), bound, provisioned(v1.PersistentVolumeReclaimDelete)),
			claim: pvc("c", "1Gi", completed("other")), step: VolumePhase, phase: v1.VolumeReleased},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := DecideVolume(tc.volume, tc.claim)
			if d.Step != tc.step || d.Phase != tc.phase {
				t.Fatalf("step %v phase %q, want %v %q (%+v)", d.Step, d.Phase, tc.step, tc.phase, d)
			}
			if (tc.reason == "") != (d.Event == nil) || d.Event != nil && d.Event.Reason != tc.reason {
				t.Fatalf("event %+v, want reason %q", d.Event, tc.reason)
			}
		})
	}
}

func typesUID(s string) types.UID { return types.UID(s) }
