package persistentvolume

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	helpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/controllers/volume"
)

// Event is an event to record on the object a decision is about.
type Event struct {
	Type, Reason, Message string
}

// ClaimStep says what to do with a claim.
type ClaimStep int

const (
	// ClaimNothing leaves the claim as it is.
	ClaimNothing ClaimStep = iota
	// ClaimPhase sets the claim's phase (Pending, Lost; no volume).
	ClaimPhase
	// ClaimBind binds the claim and Volume to each other: the volume's
	// claimRef, its phase Bound, the claim's volumeName and annotations,
	// its phase Bound with the volume's access modes and capacity.
	ClaimBind
	// ClaimSetClass gives a claim without a class the default Class
	// (upstream's retroactive default StorageClass).
	ClaimSetClass
	// ClaimProvision asks Provisioner for a volume: the claim is
	// annotated volume.kubernetes.io/storage-provisioner and stays
	// Pending.
	ClaimProvision
)

// ClaimDecision is what DecideClaim says.
type ClaimDecision struct {
	Step        ClaimStep
	Phase       v1.PersistentVolumeClaimPhase
	Volume      *v1.PersistentVolume
	Class       string
	Provisioner string
	// Event, if set, is recorded on the claim (with ClaimPhase, only when
	// the phase changes, as upstream's updateClaimStatusWithEvent).
	Event *Event
	// Err retries the claim later (a claim bound by the controller to a
	// volume that another claim has).
	Err error
}

// ClaimInputs are what DecideClaim reads besides the claim.
type ClaimInputs struct {
	// Volumes are every PersistentVolume.
	Volumes []*v1.PersistentVolume
	// Class is the claim's StorageClass, nil when it names none or it
	// does not exist.
	Class *storagev1.StorageClass
	// DefaultClass is the default StorageClass's name, "" for none.
	DefaultClass string
	// UnscheduledPods are the names of the pods that use the claim, are
	// not terminated and not scheduled yet.
	UnscheduledPods []string
}

// DecideClaim is upstream's syncClaim (pkg/controller/volume/persistentvolume):
// an unbound claim is bound to the smallest volume that fits it (capacity,
// access modes, class, volumeMode, selector) or to the one it or the
// volume names; without one it waits for its first consumer
// (WaitForFirstConsumer), is provisioned by its class's provisioner, or
// stays Pending. A bound claim whose volume is gone or bound elsewhere is
// Lost.
func DecideClaim(claim *v1.PersistentVolumeClaim, in ClaimInputs) ClaimDecision {
	if !metav1.HasAnnotation(claim.ObjectMeta, volume.AnnBindCompleted) {
		return decideUnbound(claim, in)
	}
	lost := func(reason, msg string) ClaimDecision {
		if claim.Status.Phase == v1.ClaimLost {
			return ClaimDecision{}
		}
		return ClaimDecision{Step: ClaimPhase, Phase: v1.ClaimLost, Event: &Event{v1.EventTypeWarning, reason, msg}}
	}
	if claim.Spec.VolumeName == "" {
		return lost("ClaimLost", "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!")
	}
	pv := find(in.Volumes, claim.Spec.VolumeName)
	switch {
	case pv == nil:
		return lost("ClaimLost", "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
	case pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID == claim.UID:
		return ClaimDecision{Step: ClaimBind, Volume: pv}
	default:
		return lost("ClaimMisbound", "Two claims are bound to the same volume, this one is bound incorrectly")
	}
}

func decideUnbound(claim *v1.PersistentVolumeClaim, in ClaimInputs) ClaimDecision {
	pending := func(ev *Event) ClaimDecision {
		return ClaimDecision{Step: ClaimPhase, Phase: v1.ClaimPending, Event: ev}
	}
	if claim.Spec.VolumeName == "" {
		delay := volume.DelayBinding(in.Class)
		pv, err := BestMatch(claim, in.Volumes, delay)
		if err != nil {
			return ClaimDecision{Err: fmt.Errorf("error finding PV for claim %q: %w", claim.Namespace+"/"+claim.Name, err)}
		}
		if pv != nil {
			return ClaimDecision{Step: ClaimBind, Volume: pv}
		}
		if claim.Spec.StorageClassName == nil && in.DefaultClass != "" {
			if _, beta := claim.Annotations[v1.BetaStorageClassAnnotation]; !beta {
				return ClaimDecision{Step: ClaimSetClass, Class: in.DefaultClass}
			}
		}
		_, selected := claim.Annotations[volume.AnnSelectedNode]
		switch class := volume.ClaimClass(claim); {
		case delay && !selected:
			ev := &Event{v1.EventTypeNormal, volume.EventWaitForFirstConsumer, "waiting for first consumer to be created before binding"}
			switch n := len(in.UnscheduledPods); {
			case n == 1:
				ev = &Event{v1.EventTypeNormal, volume.EventWaitForPodScheduled, fmt.Sprintf("waiting for pod %s to be scheduled", in.UnscheduledPods[0])}
			case n > 1:
				ev = &Event{v1.EventTypeNormal, volume.EventWaitForPodScheduled, fmt.Sprintf("waiting for pods %s to be scheduled", strings.Join(in.UnscheduledPods, ","))}
			}
			return pending(ev)
		case class != "":
			return provision(claim, class, in.Class)
		default:
			return pending(&Event{v1.EventTypeNormal, volume.EventFailedBinding, "no persistent volumes available for this claim and no storage class is set"})
		}
	}
	pv := find(in.Volumes, claim.Spec.VolumeName)
	switch {
	case pv == nil:
		// The user asked for a volume that does not exist (yet).
		return pending(nil)
	case pv.Spec.ClaimRef == nil:
		if err := satisfies(pv, claim); err != nil {
			return pending(&Event{v1.EventTypeWarning, volume.EventVolumeMismatch, fmt.Sprintf("Cannot bind to requested volume %q: %s", pv.Name, err)})
		}
		return ClaimDecision{Step: ClaimBind, Volume: pv}
	case helpers.IsVolumeBoundToClaim(pv, claim):
		return ClaimDecision{Step: ClaimBind, Volume: pv}
	default:
		ev := &Event{v1.EventTypeWarning, volume.EventFailedBinding, fmt.Sprintf("volume %q already bound to a different claim.", pv.Name)}
		if !metav1.HasAnnotation(claim.ObjectMeta, volume.AnnBoundByController) {
			// The user pre-bound the claim to a taken volume: it
			// waits for it to be released.
			return pending(ev)
		}
		return ClaimDecision{Event: ev, Err: fmt.Errorf("invalid binding of claim %q to volume %q: volume already claimed by %q",
			claim.Namespace+"/"+claim.Name, claim.Spec.VolumeName, pv.Spec.ClaimRef.Namespace+"/"+pv.Spec.ClaimRef.Name)}
	}
}

// provision is upstream's provisionClaim for an external provisioner
// (Kite has no in-tree volume plugins): a missing class or a
// kubernetes.io/ provisioner is a ProvisioningFailed event; else the
// claim is handed to the provisioner by its annotation.
func provision(claim *v1.PersistentVolumeClaim, className string, class *storagev1.StorageClass) ClaimDecision {
	switch {
	case class == nil:
		return ClaimDecision{Event: &Event{v1.EventTypeWarning, volume.EventProvisioningFailed, fmt.Sprintf("storageclass.storage.k8s.io %q not found", className)}}
	case strings.HasPrefix(class.Provisioner, "kubernetes.io/"):
		return ClaimDecision{Step: ClaimPhase, Phase: v1.ClaimPending,
			Event: &Event{v1.EventTypeWarning, volume.EventProvisioningFailed, fmt.Sprintf("no volume plugin matched name: %s", class.Provisioner)}}
	}
	return ClaimDecision{Step: ClaimProvision, Provisioner: class.Provisioner, Event: &Event{v1.EventTypeNormal, volume.EventExternalProvisioning,
		fmt.Sprintf("Waiting for a volume to be created either by the external provisioner '%s' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.", class.Provisioner)}}
}

// satisfies is upstream's checkVolumeSatisfyClaim: the checks a volume
// the claim names must pass.
func satisfies(pv *v1.PersistentVolume, claim *v1.PersistentVolumeClaim) error {
	requested := claim.Spec.Resources.Requests[v1.ResourceStorage]
	capacity := pv.Spec.Capacity[v1.ResourceStorage]
	switch {
	case pv.DeletionTimestamp != nil:
		return fmt.Errorf("the volume is marked for deletion %q", pv.Name)
	case capacity.Value() < requested.Value():
		return fmt.Errorf("requested PV is too small")
	case volume.VolumeClass(pv) != volume.ClaimClass(claim):
		return fmt.Errorf("storageClassName does not match")
	case ptr.Deref(claim.Spec.VolumeAttributesClassName, "") != ptr.Deref(pv.Spec.VolumeAttributesClassName, ""):
		return fmt.Errorf("volumeAttributesClassName does not match")
	case helpers.CheckVolumeModeMismatches(&claim.Spec, &pv.Spec):
		return fmt.Errorf("incompatible volumeMode")
	case !helpers.CheckAccessModes(claim, pv):
		return fmt.Errorf("incompatible accessMode")
	}
	return nil
}

// BestMatch is upstream's findBestMatchForClaim: the volumes grouped by
// their access modes, the groups holding every mode the claim asks for
// tried from the fewest modes up, and in each the volume pre-bound to the
// claim or else the smallest Available one that fits (FindMatchingVolume;
// with delay, unbound volumes are left to the scheduler).
func BestMatch(claim *v1.PersistentVolumeClaim, volumes []*v1.PersistentVolume, delay bool) (*v1.PersistentVolume, error) {
	groups := map[string][]*v1.PersistentVolume{}
	var keys []string
	for _, pv := range volumes {
		k := modesKey(pv.Spec.AccessModes)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], pv)
	}
	sort.SliceStable(keys, func(i, j int) bool {
		return len(groups[keys[i]][0].Spec.AccessModes) < len(groups[keys[j]][0].Spec.AccessModes)
	})
	for _, k := range keys {
		group := groups[k]
		if !containsAll(group[0].Spec.AccessModes, claim.Spec.AccessModes) {
			continue
		}
		pv, err := helpers.FindMatchingVolume(claim, group, nil, nil, delay, true)
		if err != nil || pv != nil {
			return pv, err
		}
	}
	return nil, nil
}

// modesKey is a set of access modes as one string, upstream's
// GetAccessModesAsString order.
func modesKey(modes []v1.PersistentVolumeAccessMode) string {
	var out []string
	for _, m := range []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce, v1.ReadOnlyMany, v1.ReadWriteMany, v1.ReadWriteOncePod} {
		for _, have := range modes {
			if have == m {
				out = append(out, string(m))
				break
			}
		}
	}
	return strings.Join(out, ",")
}

func containsAll(have, want []v1.PersistentVolumeAccessMode) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}

func find(volumes []*v1.PersistentVolume, name string) *v1.PersistentVolume {
	for _, pv := range volumes {
		if pv.Name == name {
			return pv
		}
	}
	return nil
}

// VolumeStep says what to do with a volume.
type VolumeStep int

const (
	// VolumeNothing leaves the volume as it is.
	VolumeNothing VolumeStep = iota
	// VolumePhase sets the volume's phase (and message).
	VolumePhase
	// VolumeUnbind takes the volume from a claim bound elsewhere: its
	// claimRef goes when the controller set it, else its uid (the user's
	// pre-binding stays), and it is Available again.
	VolumeUnbind
	// VolumeSyncClaim looks at the claim again: the volume was pre-bound
	// to a claim not yet bound.
	VolumeSyncClaim
)

// VolumeDecision is what DecideVolume says.
type VolumeDecision struct {
	Step    VolumeStep
	Phase   v1.PersistentVolumePhase
	Message string
	// Event is recorded on the volume; ClaimEvent on the claim.
	Event, ClaimEvent *Event
}

// DecideVolume is upstream's syncVolume: a volume without a claim is
// Available; one whose claim (by namespace, name and uid) is gone is
// Released and then reclaimed by its policy (Retain keeps it; Delete
// leaves it to the provisioner that made it, or fails without one;
// Recycle, deprecated and pluginless here, fails); one its claim is bound
// to is Bound; one whose claim is bound elsewhere is unbound (or, made by
// a provisioner with Delete, released). claim is the claimRef's claim, nil
// when gone or replaced (another uid).
func DecideVolume(pv *v1.PersistentVolume, claim *v1.PersistentVolumeClaim) VolumeDecision {
	phase := func(p v1.PersistentVolumePhase) VolumeDecision {
		if pv.Status.Phase == p {
			return VolumeDecision{}
		}
		return VolumeDecision{Step: VolumePhase, Phase: p}
	}
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID == "" {
		return phase(v1.VolumeAvailable)
	}
	switch {
	case claim == nil:
		return release(pv)
	case claim.Spec.VolumeName == "":
		if helpers.CheckVolumeModeMismatches(&claim.Spec, &pv.Spec) {
			return VolumeDecision{
				Event:      &Event{v1.EventTypeWarning, volume.EventVolumeMismatch, fmt.Sprintf("Cannot bind PersistentVolume to requested PersistentVolumeClaim %q due to incompatible volumeMode.", claim.Name)},
				ClaimEvent: &Event{v1.EventTypeWarning, volume.EventVolumeMismatch, fmt.Sprintf("Cannot bind PersistentVolume %q to requested PersistentVolumeClaim due to incompatible volumeMode.", pv.Name)},
			}
		}
		return VolumeDecision{Step: VolumeSyncClaim}
	case claim.Spec.VolumeName == pv.Name:
		return phase(v1.VolumeBound)
	case metav1.HasAnnotation(pv.ObjectMeta, volume.AnnDynamicallyProvisioned) && pv.Spec.PersistentVolumeReclaimPolicy == v1.PersistentVolumeReclaimDelete:
		return release(pv)
	default:
		return VolumeDecision{Step: VolumeUnbind}
	}
}

// release is Released, then the reclaim policy (reclaimVolume).
func release(pv *v1.PersistentVolume) VolumeDecision {
	failed := func(reason, msg string) VolumeDecision {
		if pv.Status.Phase == v1.VolumeFailed {
			return VolumeDecision{}
		}
		return VolumeDecision{Step: VolumePhase, Phase: v1.VolumeFailed, Message: msg, Event: &Event{v1.EventTypeWarning, reason, msg}}
	}
	switch pv.Spec.PersistentVolumeReclaimPolicy {
	case v1.PersistentVolumeReclaimRetain:
	case v1.PersistentVolumeReclaimDelete:
		by := pv.Annotations[volume.AnnDynamicallyProvisioned]
		if by == "" || strings.HasPrefix(by, "kubernetes.io/") {
			// Kite has no in-tree deleters: only the provisioner that
			// made a volume deletes it.
			return failed(volume.EventVolumeFailedDelete, fmt.Sprintf("error getting deleter volume plugin for volume %q: no deletable volume plugin matched", pv.Name))
		}
	case v1.PersistentVolumeReclaimRecycle:
		return failed(volume.EventVolumeFailedRecycle, "No recycler plugin found for the volume!")
	default:
		return failed("VolumeUnknownReclaimPolicy", "Volume has unrecognized PersistentVolumeReclaimPolicy")
	}
	if pv.Status.Phase == v1.VolumeReleased || pv.Status.Phase == v1.VolumeFailed {
		return VolumeDecision{}
	}
	return VolumeDecision{Step: VolumePhase, Phase: v1.VolumeReleased}
}
