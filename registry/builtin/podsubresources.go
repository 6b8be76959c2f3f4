package builtin

import (
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kite-project/kite/apis/core/defaults"
	"github.com/kite-project/kite/apis/core/validation"
	"github.com/kite-project/kite/registry"
)

// ephemeralContainersSubresource is pods/ephemeralcontainers (get, patch,
// update of a Pod), as upstream's EphemeralContainersStrategy: a write
// changes spec.ephemeralContainers and nothing else (the rest of spec,
// status and the metadata a status write may not change come from the
// stored pod), and bumps the generation when it added one.
func ephemeralContainersSubresource() *registry.Subresource {
	return &registry.Subresource{
		PrepareForUpdate: func(obj, old runtime.Object) {
			pod, oldPod := obj.(*v1.Pod), old.(*v1.Pod)
			ephemeral := pod.Spec.EphemeralContainers
			pod.Spec = oldPod.Spec
			pod.Status = oldPod.Status
			metav1.ResetObjectMetaForStatus(&pod.ObjectMeta, &oldPod.ObjectMeta)
			pod.Spec.EphemeralContainers = ephemeral
			bumpPodGeneration(pod, oldPod)
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidatePodEphemeralContainersUpdate(obj.(*v1.Pod), old.(*v1.Pod))
		},
		// Its writers own spec.ephemeralContainers alone, as upstream's
		// EphemeralContainersStrategy's reset fields filter.
		ResetFields: fieldpath.NewIncludeMatcherFilter(fieldpath.MakePrefixMatcherOrDie("spec", "ephemeralContainers")),
	}
}

// resizeSubresource is pods/resize (get, patch, update of a Pod), as
// upstream's ResizeStrategy with 1.37's gates
// (InPlacePodLevelResourcesVerticalScaling and
// PodLevelResourcesFixDefaulting beta, on): a write changes the
// pod-level resources (spec.resources) and the resources and
// resizePolicy of containers and init containers, and nothing else;
// pod-level resources a write leaves out are kept, and those it sets are
// completed as on create (defaults.PodLevelResources). When
// containers were added, removed, renamed or reordered the write is kept
// as it came, for validation to refuse it with upstream's message.
func resizeSubresource() *registry.Subresource {
	return &registry.Subresource{
		PrepareForUpdate: func(obj, old runtime.Object) {
			pod, oldPod := obj.(*v1.Pod), old.(*v1.Pod)
			dropNonResizeUpdates(pod, oldPod)
			preparePodLevelResize(pod, oldPod)
			bumpPodGeneration(pod, oldPod)
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidatePodResize(obj.(*v1.Pod), old.(*v1.Pod))
		},
		// Its writers own the containers' and init containers' resources
		// and resizePolicy alone, as upstream's ResizeStrategy's reset
		// fields filter (which, in 1.37, leaves out spec.resources).
		ResetFields: fieldpath.NewIncludeMatcherFilter(
			fieldpath.MakePrefixMatcherOrDie("spec", "containers", fieldpath.MatchAnyPathElement(), "resources"),
			fieldpath.MakePrefixMatcherOrDie("spec", "containers", fieldpath.MatchAnyPathElement(), "resizePolicy"),
			fieldpath.MakePrefixMatcherOrDie("spec", "initContainers", fieldpath.MatchAnyPathElement(), "resources"),
			fieldpath.MakePrefixMatcherOrDie("spec", "initContainers", fieldpath.MatchAnyPathElement(), "resizePolicy"),
		),
	}
}

// dropNonResizeUpdates is upstream's: pod becomes oldPod with the
// pod-level resources and the containers' resources and resizePolicy of
// pod, unless containers were added, removed, renamed or reordered.
func dropNonResizeUpdates(pod, oldPod *v1.Pod) {
	if len(pod.Spec.Containers) != len(oldPod.Spec.Containers) || len(pod.Spec.InitContainers) != len(oldPod.Spec.InitContainers) {
		return
	}
	containers, ok := keepResizeFields(pod.Spec.Containers, oldPod.Spec.Containers)
	if !ok {
		return
	}
	inits, ok := keepResizeFields(pod.Spec.InitContainers, oldPod.Spec.InitContainers)
	if !ok {
		return
	}
	resources := pod.Spec.Resources
	pod.Spec = *oldPod.Spec.DeepCopy()
	pod.Spec.Resources = resources
	pod.Spec.Containers, pod.Spec.InitContainers = containers, inits
	pod.Status = oldPod.Status
	metav1.ResetObjectMetaForStatus(&pod.ObjectMeta, &oldPod.ObjectMeta)
}

// preparePodLevelResize keeps the pod-level resources a client unaware
// of them dropped, and completes those set, as upstream's
// podResizeStrategy.PrepareForUpdate.
func preparePodLevelResize(pod, oldPod *v1.Pod) {
	if pod.Spec.Resources == nil && oldPod.Spec.Resources != nil {
		pod.Spec.Resources = oldPod.Spec.Resources.DeepCopy()
	}
	if pod.Spec.Resources != nil {
		defaults.PodLevelResources(pod)
	}
}

// keepResizeFields is old's containers with the resources and
// resizePolicy of the new ones (upstream's
// dropNonResizeUpdatesForContainers); false when a name differs.
func keepResizeFields(containers, old []v1.Container) ([]v1.Container, bool) {
	if len(containers) == 0 {
		return containers, true
	}
	out := make([]v1.Container, len(old))
	for i := range old {
		if containers[i].Name != old[i].Name {
			return nil, false
		}
		out[i] = *old[i].DeepCopy()
		out[i].Resources = containers[i].Resources
		out[i].ResizePolicy = containers[i].ResizePolicy
	}
	return out, true
}

// bumpPodGeneration is upstream's updatePodGeneration: a change of spec
// is a new generation.
func bumpPodGeneration(pod, old *v1.Pod) {
	if !apiequality.Semantic.DeepEqual(pod.Spec, old.Spec) {
		pod.Generation = old.Generation + 1
	}
}
