package builtin

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"

	"github.com/kite-project/kite/registry"
)

// PluginPriority is upstream's name (plugin/pkg/admission/priority).
const PluginPriority = "Priority"

// priorityClassesResource is the priority classes' group resource as a
// resource set names it.
const priorityClassesResource = "priorityclasses.scheduling.k8s.io"

// PriorityPlugin is upstream's Priority admission: a new pod's
// priorityClassName (or, when it names none, the global default class)
// resolves to spec.priority and spec.preemptionPolicy; a class that does
// not exist, or a priority or policy in the spec that differs from the
// class's, is refused with upstream's message; an update keeps what the
// create set. Only one PriorityClass may be the global default. Unlike
// 1.16's plugin, 1.37's lets system-* classes be used in any namespace
// (upstream limits them with quota, not here). priorityClasses returns
// the PriorityClasses' Store, called per request.
func PriorityPlugin(priorityClasses func() *registry.Store) registry.AdmissionPlugin {
	p := priorityAdmission{classes: func(ctx context.Context) ([]schedulingv1.PriorityClass, error) {
		store := priorityClasses()
		if store == nil {
			return nil, fmt.Errorf("priorityclasses are not served yet")
		}
		obj, err := cachedList(ctx, store, "")
		if err != nil {
			return nil, err
		}
		return obj.(*schedulingv1.PriorityClassList).Items, nil
	}, class: func(ctx context.Context, name string) (*schedulingv1.PriorityClass, error) {
		store := priorityClasses()
		if store == nil {
			return nil, fmt.Errorf("priorityclasses are not served yet")
		}
		obj, err := cachedGet(ctx, store, "", name)
		if err != nil {
			return nil, err
		}
		return obj.(*schedulingv1.PriorityClass), nil
	}}
	return registry.AdmissionPlugin{
		Name:     PluginPriority,
		Handles:  func(op admission.Operation) bool { return op == admission.Create || op == admission.Update },
		Admit:    p.admit,
		Validate: p.validate,
	}
}

type priorityAdmission struct {
	classes func(ctx context.Context) ([]schedulingv1.PriorityClass, error)
	class   func(ctx context.Context, name string) (*schedulingv1.PriorityClass, error)
}

func (p priorityAdmission) admit(ctx context.Context, a admission.Attributes) error {
	if a.GetSubresource() != "" || a.GetResource().GroupResource() != v1.Resource("pods") {
		return nil
	}
	pod, ok := a.GetObject().(*v1.Pod)
	if !ok {
		return apierrors.NewBadRequest("resource was marked with kind Pod but was unable to be converted")
	}
	if a.GetOperation() == admission.Update {
		old, ok := a.GetOldObject().(*v1.Pod)
		if !ok {
			return apierrors.NewBadRequest("resource was marked with kind Pod but was unable to be converted")
		}
		KeepPriority(pod, old)
		return nil
	}
	var class *schedulingv1.PriorityClass
	if pod.Spec.PriorityClassName == "" {
		list, err := p.classes(ctx)
		if err != nil {
			return fmt.Errorf("error occurred while retrieving default priority class: %w", err)
		}
		class = DefaultPriorityClass(list)
	} else {
		c, err := p.class(ctx, pod.Spec.PriorityClassName)
		if apierrors.IsNotFound(err) {
			return admission.NewForbidden(a, fmt.Errorf("no PriorityClass with name %v was found", pod.Spec.PriorityClassName))
		}
		if err != nil {
			return fmt.Errorf("failed to resolve PriorityClass with name %s: %w", pod.Spec.PriorityClassName, err)
		}
		class = c
	}
	if err := ResolvePriority(pod, class); err != nil {
		return admission.NewForbidden(a, err)
	}
	return nil
}

func (p priorityAdmission) validate(ctx context.Context, a admission.Attributes) error {
	if a.GetSubresource() != "" || a.GetResource().GroupResource() != schedulingv1.Resource("priorityclasses") {
		return nil
	}
	pc, ok := a.GetObject().(*schedulingv1.PriorityClass)
	if !ok {
		return apierrors.NewBadRequest("resource was marked with kind PriorityClass but was unable to be converted")
	}
	if !pc.GlobalDefault {
		return nil
	}
	list, err := p.classes(ctx)
	if err != nil {
		return fmt.Errorf("failed to get default priority class: %w", err)
	}
	if dpc := DefaultPriorityClass(list); dpc != nil && (a.GetOperation() == admission.Create || dpc.Name != pc.Name) {
		return admission.NewForbidden(a, fmt.Errorf("PriorityClass %v is already marked as default. Only one default can exist", dpc.Name))
	}
	return nil
}

// DefaultPriorityClass is the global default among classes: the one of
// lowest value when a race made several (as upstream), or nil.
func DefaultPriorityClass(classes []schedulingv1.PriorityClass) *schedulingv1.PriorityClass {
	var def *schedulingv1.PriorityClass
	for i := range classes {
		if c := &classes[i]; c.GlobalDefault && (def == nil || def.Value > c.Value) {
			def = c
		}
	}
	return def
}

// ResolvePriority sets a new pod's priority, class name and preemption
// policy from class (nil: no class and no default, priority 0 and
// PreemptLowerPriority), or says why the pod's own values conflict, in
// upstream's words.
func ResolvePriority(pod *v1.Pod, class *schedulingv1.PriorityClass) error {
	// Upstream's DefaultPriorityWhenNoDefaultClassExists.
	priority := int32(0)
	policy := v1.PreemptLowerPriority
	policyP := &policy
	if class != nil {
		pod.Spec.PriorityClassName = class.Name
		priority, policyP = class.Value, class.PreemptionPolicy
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority != priority {
		return fmt.Errorf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, priority)
	}
	pod.Spec.Priority = &priority
	if policyP != nil {
		if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy != *policyP {
			return fmt.Errorf("the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *pod.Spec.PreemptionPolicy, *policyP)
		}
		p := *policyP
		pod.Spec.PreemptionPolicy = &p
	}
	return nil
}

// KeepPriority is upstream's update rule: what the create set stays when
// an update leaves it out (validation refuses any other change).
func KeepPriority(pod, old *v1.Pod) {
	if pod.Spec.Priority == nil && old.Spec.Priority != nil {
		pod.Spec.Priority = old.Spec.Priority
	}
	if pod.Spec.PreemptionPolicy == nil && old.Spec.PreemptionPolicy != nil {
		pod.Spec.PreemptionPolicy = old.Spec.PreemptionPolicy
	}
}
