package scheduler

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	schedulingcorev1 "k8s.io/component-helpers/scheduling/corev1"
	helpers "k8s.io/component-helpers/storage/volume"

	"github.com/kite-project/kite/apis/storage/localpath"
)

// The VolumeBinding plugin's reasons, in upstream's words
// (pkg/scheduler/framework/plugins/volumebinding).
const (
	ReasonVolumeBindConflict = "node(s) didn't find available persistent volumes to bind"
	ReasonVolumeNodeConflict = "node(s) had volume node affinity conflict"
	ReasonVolumeNoSpace      = "node(s) did not have enough free storage"
	ReasonVolumePVNotExist   = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
	// ReasonUnboundImmediate is PreFilter's: such a claim is the binder's
	// to bind first.
	ReasonUnboundImmediate = "pod has unbound immediate PersistentVolumeClaims"
)

// Volumes is what the volume filter reads: the cluster's claims, volumes
// and classes, and the volumes chosen for pods not yet seen bound.
type Volumes struct {
	// Claim returns the claim namespace/name.
	Claim func(namespace, name string) (*v1.PersistentVolumeClaim, bool)
	// Volumes are every PersistentVolume.
	Volumes []*v1.PersistentVolume
	// Class returns the StorageClass name.
	Class func(name string) (*storagev1.StorageClass, bool)
	// Assumed are volumes (by name) chosen for other pods' claims that
	// the cache does not show bound yet.
	Assumed map[string]*v1.PersistentVolume
}

// VolumePlan is what placing a pod on its node asks of its claims that
// wait for their first consumer: volumes to bind to claims (the volume
// with its claimRef set, for the binder to finish), and claims to
// provision on the node (volume.kubernetes.io/selected-node).
type VolumePlan struct {
	Bind      []*v1.PersistentVolume
	Provision []*v1.PersistentVolumeClaim
}

// podVolumes are a pod's claims sorted for the filter: bound ones with
// their volume, and unbound ones of WaitForFirstConsumer classes.
type podVolumes struct {
	bound   []*v1.PersistentVolume
	delayed []*v1.PersistentVolumeClaim
}

// volumePreFilter is VolumeBinding's PreFilter: every claim of the pod
// must exist and not be being deleted, and an unbound claim of an
// Immediate class makes the pod wait for the binder. It returns the
// claims to filter nodes by (nil when the pod has none) or the message of
// the pod's refusal.
func volumePreFilter(pod *v1.Pod, vs *Volumes) (*podVolumes, string) {
	var pv podVolumes
	uses := false
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		name := ""
		switch {
		case vol.PersistentVolumeClaim != nil:
			name = vol.PersistentVolumeClaim.ClaimName
		case vol.Ephemeral != nil:
			name = pod.Name + "-" + vol.Name
		default:
			continue
		}
		uses = true
		claim, ok := vs.Claim(pod.Namespace, name)
		if !ok {
			return nil, fmt.Sprintf("persistentvolumeclaim %q not found", name)
		}
		if claim.DeletionTimestamp != nil {
			return nil, fmt.Sprintf("persistentvolumeclaim %q is being deleted", name)
		}
		if claim.Spec.VolumeName != "" {
			// nil when missing: Filter says so per node, as upstream's.
			pv.bound = append(pv.bound, findVolume(vs.Volumes, claim.Spec.VolumeName))
			continue
		}
		class, _ := vs.Class(className(claim))
		if class == nil || class.VolumeBindingMode == nil || *class.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
			return nil, ReasonUnboundImmediate
		}
		pv.delayed = append(pv.delayed, claim)
	}
	if !uses {
		return nil, ""
	}
	return &pv, ""
}

// volumeFilter is VolumeBinding's Filter on one node: a bound claim's
// volume must exist and its node affinity match the node; each waiting
// claim takes an Available volume that fits and may be reached from the
// node (the smallest, none taken twice), or else is provisioned there if
// its class's provisioner can (its allowed topologies match the node;
// local-path needs a node that says where its volumes live). It returns
// the reasons the node is refused, or the plan for the node.
func volumeFilter(pv *podVolumes, node *v1.Node, vs *Volumes) ([]string, *VolumePlan) {
	for _, volume := range pv.bound {
		if volume == nil {
			return []string{ReasonVolumePVNotExist}, nil
		}
		if err := helpers.CheckNodeAffinity(volume, node.Labels); err != nil {
			return []string{ReasonVolumeNodeConflict}, nil
		}
	}
	plan := &VolumePlan{}
	chosen := map[string]*v1.PersistentVolume{}
	for k, v := range vs.Assumed {
		chosen[k] = v
	}
	var reasons []string
	for _, claim := range pv.delayed {
		match, err := helpers.FindMatchingVolume(claim, vs.Volumes, node, chosen, false, true)
		if err == nil && match != nil {
			chosen[match.Name] = match
			bound, _, err := helpers.GetBindVolumeToClaim(match, claim)
			if err == nil {
				plan.Bind = append(plan.Bind, bound)
				continue
			}
		}
		class, _ := vs.Class(className(claim))
		switch {
		case class == nil || class.Provisioner == helpers.NotSupportedProvisioner:
			reasons = appendOnce(reasons, ReasonVolumeBindConflict)
		case !topologyAllows(class, node):
			reasons = appendOnce(reasons, ReasonVolumeNodeConflict)
		case class.Provisioner == localpath.ProvisionerName && node.Annotations[localpath.DirAnnotation] == "":
			reasons = appendOnce(reasons, ReasonVolumeNoSpace)
		default:
			plan.Provision = append(plan.Provision, claim)
		}
	}
	if len(reasons) > 0 {
		return reasons, nil
	}
	return nil, plan
}

func appendOnce(rs []string, r string) []string {
	for _, have := range rs {
		if have == r {
			return rs
		}
	}
	return append(rs, r)
}

// topologyAllows says whether a class's allowedTopologies (none: any)
// include the node.
func topologyAllows(class *storagev1.StorageClass, node *v1.Node) bool {
	if len(class.AllowedTopologies) == 0 {
		return true
	}
	var terms []v1.NodeSelectorTerm
	for _, t := range class.AllowedTopologies {
		var term v1.NodeSelectorTerm
		for _, e := range t.MatchLabelExpressions {
			term.MatchExpressions = append(term.MatchExpressions, v1.NodeSelectorRequirement{Key: e.Key, Operator: v1.NodeSelectorOpIn, Values: e.Values})
		}
		terms = append(terms, term)
	}
	ok, err := schedulingcorev1.MatchNodeSelectorTerms(node, &v1.NodeSelector{NodeSelectorTerms: terms})
	return err == nil && ok
}

func className(c *v1.PersistentVolumeClaim) string {
	if c.Spec.StorageClassName != nil {
		return *c.Spec.StorageClassName
	}
	return c.Annotations[v1.BetaStorageClassAnnotation]
}

func findVolume(vs []*v1.PersistentVolume, name string) *v1.PersistentVolume {
	for _, v := range vs {
		if v.Name == name {
			return v
		}
	}
	return nil
}
