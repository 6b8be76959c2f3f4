package builtin

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apiserver/pkg/admission"

	"github.com/kite-project/kite/registry"
)

// Upstream's names (plugin/pkg/admission/limitranger).
const (
	PluginLimitRanger = "LimitRanger"
	// LimitRangerAnnotation on a pod says which defaults the plugin set.
	LimitRangerAnnotation = "kubernetes.io/limit-ranger"
)

// LimitRangerPlugin is upstream's LimitRanger: on a pod create, each
// LimitRange of the namespace fills the containers' and init
// containers' missing requests and limits from its Container item's
// defaultRequest and default (and says so in the kubernetes.io/limit-ranger
// annotation); at validation, Container and Pod items' min, max and
// maxLimitRequestRatio hold for pods (creates and pods/resize), and
// PersistentVolumeClaim items' min and max for claims' storage requests,
// with upstream's messages. The LimitRanges are read from the watch cache
// at every request (upstream reads an informer, then live for 30 s when
// it has none). limitRanges returns the LimitRanges' Store.
func LimitRangerPlugin(limitRanges func() *registry.Store) registry.AdmissionPlugin {
	run := func(ctx context.Context, a admission.Attributes, fn func(lr *v1.LimitRange, obj any) error) error {
		if !limitRangerSupports(a) {
			return nil
		}
		if old := a.GetOldObject(); old != nil {
			m, err := meta.Accessor(old)
			if err != nil {
				return admission.NewForbidden(a, err)
			}
			// An object being deleted may be updated whatever its limits.
			if m.GetDeletionTimestamp() != nil {
				return nil
			}
		}
		store := limitRanges()
		if store == nil {
			return nil
		}
		obj, err := cachedList(ctx, store, a.GetNamespace())
		if err != nil {
			return admission.NewForbidden(a, fmt.Errorf("unable to %s %v at this time because there was an error enforcing limit ranges", a.GetOperation(), a.GetResource()))
		}
		items := obj.(*v1.LimitRangeList).Items
		for i := range items {
			if err := fn(&items[i], a.GetObject()); err != nil {
				return admission.NewForbidden(a, err)
			}
		}
		return nil
	}
	return registry.AdmissionPlugin{
		Name:    PluginLimitRanger,
		Handles: func(op admission.Operation) bool { return op == admission.Create || op == admission.Update },
		Admit: func(ctx context.Context, a admission.Attributes) error {
			return run(ctx, a, func(lr *v1.LimitRange, obj any) error {
				if pod, ok := obj.(*v1.Pod); ok {
					LimitRangeDefaults(lr, pod)
				}
				return nil
			})
		},
		Validate: func(ctx context.Context, a admission.Attributes) error {
			return run(ctx, a, func(lr *v1.LimitRange, obj any) error {
				switch o := obj.(type) {
				case *v1.Pod:
					return ValidatePodLimits(lr, o)
				case *v1.PersistentVolumeClaim:
					return ValidateClaimLimits(lr, o)
				}
				return nil
			})
		},
	}
}

// limitRangerSupports is upstream's SupportsAttributes: pod creates and
// resizes, claim creates and updates.
func limitRangerSupports(a admission.Attributes) bool {
	kind := a.GetKind().GroupKind()
	pod := kind == v1.SchemeGroupVersion.WithKind("Pod").GroupKind()
	if a.GetSubresource() == "resize" && pod && a.GetOperation() == admission.Update {
		return true
	}
	if a.GetSubresource() != "" || (pod && a.GetOperation() == admission.Update) {
		return false
	}
	return pod || kind == v1.SchemeGroupVersion.WithKind("PersistentVolumeClaim").GroupKind()
}

// LimitRangeDefaults is upstream's PodMutateLimitFunc: the Container
// items' defaultRequest and default fill what each container and init
// container leaves out, and the annotation lists what was set.
func LimitRangeDefaults(lr *v1.LimitRange, pod *v1.Pod) {
	def := v1.ResourceRequirements{Requests: v1.ResourceList{}, Limits: v1.ResourceList{}}
	for _, item := range lr.Spec.Limits {
		if item.Type != v1.LimitTypeContainer {
			continue
		}
		for k, v := range item.DefaultRequest {
			def.Requests[k] = v.DeepCopy()
		}
		for k, v := range item.Default {
			def.Limits[k] = v.DeepCopy()
		}
	}
	var notes []string
	for i := range pod.Spec.Containers {
		notes = mergeContainerDefaults(&pod.Spec.Containers[i], def, "container", notes)
	}
	for i := range pod.Spec.InitContainers {
		notes = mergeContainerDefaults(&pod.Spec.InitContainers[i], def, "init container", notes)
	}
	if len(notes) > 0 {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[LimitRangerAnnotation] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
	}
}

// mergeContainerDefaults is upstream's mergeContainerResources. As
// upstream, it leaves empty request and limit lists behind.
func mergeContainerDefaults(c *v1.Container, def v1.ResourceRequirements, prefix string, notes []string) []string {
	if c.Resources.Limits == nil {
		c.Resources.Limits = v1.ResourceList{}
	}
	if c.Resources.Requests == nil {
		c.Resources.Requests = v1.ResourceList{}
	}
	var setRequests, setLimits []string
	for k, v := range def.Limits {
		if _, ok := c.Resources.Limits[k]; !ok {
			c.Resources.Limits[k] = v.DeepCopy()
			setLimits = append(setLimits, string(k))
		}
	}
	for k, v := range def.Requests {
		if _, ok := c.Resources.Requests[k]; !ok {
			c.Resources.Requests[k] = v.DeepCopy()
			setRequests = append(setRequests, string(k))
		}
	}
	if len(setRequests) > 0 {
		sort.Strings(setRequests)
		notes = append(notes, strings.Join(setRequests, ", ")+fmt.Sprintf(" request for %s %s", prefix, c.Name))
	}
	if len(setLimits) > 0 {
		sort.Strings(setLimits)
		notes = append(notes, strings.Join(setLimits, ", ")+fmt.Sprintf(" limit for %s %s", prefix, c.Name))
	}
	return notes
}

// ValidatePodLimits is upstream's PodValidateLimitFunc: every container
// and init container against the Container items, the pod's effective
// requests and limits (pod-level resources win for cpu and memory, as
// 1.37's PodLevelResources) against the Pod items. All violations are
// reported, joined as upstream's aggregate.
func ValidatePodLimits(lr *v1.LimitRange, pod *v1.Pod) error {
	var errs []error
	check := func(kind string, item v1.LimitRangeItem, requests, limits v1.ResourceList) {
		for k, v := range item.Min {
			errs = append(errs, minConstraint(kind, string(k), v, requests, limits))
		}
		for k, v := range item.Max {
			errs = append(errs, maxConstraint(kind, string(k), v, requests, limits))
		}
		for k, v := range item.MaxLimitRequestRatio {
			errs = append(errs, limitRequestRatioConstraint(kind, string(k), v, requests, limits))
		}
	}
	for _, item := range lr.Spec.Limits {
		switch item.Type {
		case v1.LimitTypeContainer:
			for _, cs := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
				for _, c := range cs {
					check(string(item.Type), item, c.Resources.Requests, c.Resources.Limits)
				}
			}
		case v1.LimitTypePod:
			check(string(item.Type), item, limitRangerPodResources(pod, func(r v1.ResourceRequirements) v1.ResourceList { return r.Requests }),
				limitRangerPodResources(pod, func(r v1.ResourceRequirements) v1.ResourceList { return r.Limits }))
		}
	}
	return aggregate(errs)
}

// ValidateClaimLimits is upstream's PersistentVolumeClaimValidateLimitFunc.
func ValidateClaimLimits(lr *v1.LimitRange, pvc *v1.PersistentVolumeClaim) error {
	var errs []error
	for _, item := range lr.Spec.Limits {
		if item.Type != v1.LimitTypePersistentVolumeClaim {
			continue
		}
		for k, v := range item.Min {
			errs = append(errs, minConstraint(string(item.Type), string(k), v, pvc.Spec.Resources.Requests, v1.ResourceList{}))
		}
		for k, v := range item.Max {
			errs = append(errs, maxRequestConstraint(string(item.Type), string(k), v, pvc.Spec.Resources.Requests))
		}
	}
	return aggregate(errs)
}

// aggregate is upstream's utilerrors.NewAggregate message: one error as
// it is, several as "[a, b]".
func aggregate(errs []error) error {
	var msgs []string
	for _, err := range errs {
		if err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	switch len(msgs) {
	case 0:
		return nil
	case 1:
		return errors.New(msgs[0])
	}
	return errors.New("[" + strings.Join(msgs, ", ") + "]")
}

// limitRangerPodResources is upstream's podRequests / podLimits of the
// LimitRanger (no overhead): containers and restartable init containers
// add up, the largest of the other init containers (each with the
// sidecars started before it) is the floor; pod-level cpu and memory
// replace the sum.
func limitRangerPodResources(pod *v1.Pod, of func(v1.ResourceRequirements) v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		addResources(out, of(c.Resources))
	}
	sidecars, inits := v1.ResourceList{}, v1.ResourceList{}
	for _, c := range pod.Spec.InitContainers {
		r := of(c.Resources)
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			addResources(out, r)
			addResources(sidecars, r)
			r = sidecars
		} else {
			tmp := v1.ResourceList{}
			addResources(tmp, r)
			addResources(tmp, sidecars)
			r = tmp
		}
		maxResources(inits, r)
	}
	maxResources(out, inits)
	if pod.Spec.Resources != nil {
		for name, q := range of(*pod.Spec.Resources) {
			if name == v1.ResourceCPU || name == v1.ResourceMemory {
				out[name] = q
			}
		}
	}
	return out
}

func addResources(list, add v1.ResourceList) {
	for name, q := range add {
		if v, ok := list[name]; ok {
			v.Add(q)
			list[name] = v
		} else {
			list[name] = q.DeepCopy()
		}
	}
}

func maxResources(list, other v1.ResourceList) {
	for name, q := range other {
		if v, ok := list[name]; !ok || q.Cmp(v) > 0 {
			list[name] = q.DeepCopy()
		}
	}
}

// requestLimitEnforcedValues compares in milli-units when all three fit,
// as upstream.
func requestLimitEnforcedValues(req, lim, enforced resource.Quantity) (request, limit, enf int64) {
	request, limit, enf = req.Value(), lim.Value(), enforced.Value()
	if request <= resource.MaxMilliValue && limit <= resource.MaxMilliValue && enf <= resource.MaxMilliValue {
		request, limit, enf = req.MilliValue(), lim.MilliValue(), enforced.MilliValue()
	}
	return request, limit, enf
}

func minConstraint(limitType, name string, enforced resource.Quantity, requests, limits v1.ResourceList) error {
	req, reqExists := requests[v1.ResourceName(name)]
	lim, limExists := limits[v1.ResourceName(name)]
	observedReq, observedLim, enf := requestLimitEnforcedValues(req, lim, enforced)
	if !reqExists {
		return fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", name, limitType, enforced.String())
	}
	if observedReq < enf {
		return fmt.Errorf("minimum %s usage per %s is %s, but request is %s", name, limitType, enforced.String(), req.String())
	}
	if limExists && observedLim < enf {
		return fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", name, limitType, enforced.String(), lim.String())
	}
	return nil
}

func maxRequestConstraint(limitType, name string, enforced resource.Quantity, requests v1.ResourceList) error {
	req, reqExists := requests[v1.ResourceName(name)]
	observedReq, _, enf := requestLimitEnforcedValues(req, resource.Quantity{}, enforced)
	if !reqExists {
		return fmt.Errorf("maximum %s usage per %s is %s.  No request is specified", name, limitType, enforced.String())
	}
	if observedReq > enf {
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, limitType, enforced.String(), req.String())
	}
	return nil
}

func maxConstraint(limitType, name string, enforced resource.Quantity, requests, limits v1.ResourceList) error {
	req, reqExists := requests[v1.ResourceName(name)]
	lim, limExists := limits[v1.ResourceName(name)]
	observedReq, observedLim, enf := requestLimitEnforcedValues(req, lim, enforced)
	if !limExists {
		return fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", name, limitType, enforced.String())
	}
	if observedLim > enf {
		return fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", name, limitType, enforced.String(), lim.String())
	}
	if reqExists && observedReq > enf {
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, limitType, enforced.String(), req.String())
	}
	return nil
}

func limitRequestRatioConstraint(limitType, name string, enforced resource.Quantity, requests, limits v1.ResourceList) error {
	req, reqExists := requests[v1.ResourceName(name)]
	lim, limExists := limits[v1.ResourceName(name)]
	observedReq, observedLim, _ := requestLimitEnforcedValues(req, lim, enforced)
	if !reqExists || observedReq == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, limitType, enforced.String())
	}
	if !limExists || observedLim == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, limitType, enforced.String())
	}
	observed := float64(observedLim) / float64(observedReq)
	display := observed
	maxRatio := float64(enforced.Value())
	if enforced.Value() <= resource.MaxMilliValue {
		observed *= 1000
		maxRatio = float64(enforced.MilliValue())
	}
	if observed > maxRatio {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, limitType, enforced.String(), display)
	}
	return nil
}
