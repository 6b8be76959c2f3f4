package builtin

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"

	"github.com/kite-project/kite/registry"
)

// PluginRuntimeClass is upstream's name (plugin/pkg/admission/runtimeclass).
const PluginRuntimeClass = "RuntimeClass"

// runtimeClassesResource is the RuntimeClasses' group resource as a
// resource set names it.
const runtimeClassesResource = "runtimeclasses.node.k8s.io"

// RuntimeClassPlugin is upstream's RuntimeClass admission, on pod
// creates: the pod's runtimeClassName must name a RuntimeClass (403
// otherwise); its overhead becomes the pod's (a different one in the pod
// is refused) and its scheduling nodeSelector and tolerations are merged
// into the pod's. At validation the pod's overhead must still be the
// class's. runtimeClasses returns the RuntimeClasses' Store, called per
// request.
func RuntimeClassPlugin(runtimeClasses func() *registry.Store) registry.AdmissionPlugin {
	get := func(ctx context.Context, a admission.Attributes) (*v1.Pod, *nodev1.RuntimeClass, error) {
		pod, ok := a.GetObject().(*v1.Pod)
		if !ok {
			return nil, nil, apierrors.NewBadRequest("Resource was marked with kind Pod but was unable to be converted")
		}
		if pod.Spec.RuntimeClassName == nil {
			return pod, nil, nil
		}
		store := runtimeClasses()
		if store == nil {
			return nil, nil, fmt.Errorf("runtimeclasses are not served yet")
		}
		obj, err := cachedGet(ctx, store, "", *pod.Spec.RuntimeClassName)
		if apierrors.IsNotFound(err) {
			return nil, nil, admission.NewForbidden(a, fmt.Errorf("pod rejected: RuntimeClass %q not found", *pod.Spec.RuntimeClassName))
		}
		if err != nil {
			return nil, nil, err
		}
		return pod, obj.(*nodev1.RuntimeClass), nil
	}
	ignore := func(a admission.Attributes) bool {
		return a.GetSubresource() != "" || a.GetResource().GroupResource() != v1.Resource("pods")
	}
	return registry.AdmissionPlugin{
		Name:    PluginRuntimeClass,
		Handles: func(op admission.Operation) bool { return op == admission.Create },
		Admit: func(ctx context.Context, a admission.Attributes) error {
			if ignore(a) {
				return nil
			}
			pod, rc, err := get(ctx, a)
			if err != nil {
				return err
			}
			if err := ApplyRuntimeClass(pod, rc); err != nil {
				return admission.NewForbidden(a, err)
			}
			return nil
		},
		Validate: func(ctx context.Context, a admission.Attributes) error {
			if ignore(a) {
				return nil
			}
			pod, rc, err := get(ctx, a)
			if err != nil {
				return err
			}
			if err := ValidateRuntimeClassOverhead(pod, rc); err != nil {
				return admission.NewForbidden(a, err)
			}
			return nil
		},
	}
}

// ApplyRuntimeClass is upstream's setOverhead and setScheduling: rc's
// overhead and scheduling (nodeSelector, tolerations) into the pod, or
// the conflict, in upstream's words. rc may be nil.
func ApplyRuntimeClass(pod *v1.Pod, rc *nodev1.RuntimeClass) error {
	if rc == nil {
		return nil
	}
	if rc.Overhead != nil {
		if len(pod.Spec.Overhead) > 0 && !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, pod.Spec.Overhead) {
			return fmt.Errorf("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
		}
		pod.Spec.Overhead = rc.Overhead.PodFixed.DeepCopy()
	}
	if rc.Scheduling == nil {
		return nil
	}
	selector := pod.Spec.NodeSelector
	if selector == nil {
		selector = map[string]string{}
		for k, v := range rc.Scheduling.NodeSelector {
			selector[k] = v
		}
		if len(selector) == 0 {
			selector = nil
		}
	} else {
		for key, value := range rc.Scheduling.NodeSelector {
			if podValue, ok := selector[key]; ok && podValue != value {
				return fmt.Errorf("conflict: runtimeClass.scheduling.nodeSelector[%s] = %s; pod.spec.nodeSelector[%s] = %s", key, value, key, podValue)
			}
			selector[key] = value
		}
	}
	pod.Spec.NodeSelector = selector
	pod.Spec.Tolerations = MergeTolerations(pod.Spec.Tolerations, rc.Scheduling.Tolerations)
	return nil
}

// ValidateRuntimeClassOverhead is upstream's validateOverhead: the pod's
// overhead is exactly its RuntimeClass's, or absent when the class has
// none.
func ValidateRuntimeClassOverhead(pod *v1.Pod, rc *nodev1.RuntimeClass) error {
	if rc != nil && rc.Overhead != nil {
		if !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, pod.Spec.Overhead) {
			return fmt.Errorf("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
		}
		return nil
	}
	if pod.Spec.Overhead != nil {
		return fmt.Errorf("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
	}
	return nil
}

// MergeTolerations is upstream's (pkg/util/tolerations): both sets, a
// toleration left out when another one tolerates a superset of it (of
// equal ones, the first stays).
func MergeTolerations(first, second []v1.Toleration) []v1.Toleration {
	all := append(append([]v1.Toleration(nil), first...), second...)
	var merged []v1.Toleration
next:
	for i, t := range all {
		for _, t2 := range merged {
			if tolerationIsSuperset(t2, t) {
				continue next
			}
		}
		for _, t2 := range all[i+1:] {
			if !apiequality.Semantic.DeepEqual(&t, &t2) && tolerationIsSuperset(t2, t) {
				continue next
			}
		}
		merged = append(merged, t)
	}
	return merged
}

// tolerationIsSuperset says whether ss tolerates everything t does.
func tolerationIsSuperset(ss, t v1.Toleration) bool {
	if apiequality.Semantic.DeepEqual(&t, &ss) {
		return true
	}
	// An empty key with Exists matches every key.
	if t.Key != ss.Key && (ss.Key != "" || ss.Operator != v1.TolerationOpExists) {
		return false
	}
	// An empty effect matches every effect.
	if t.Effect != ss.Effect && ss.Effect != "" {
		return false
	}
	if ss.Effect == v1.TaintEffectNoExecute && ss.TolerationSeconds != nil {
		if t.TolerationSeconds == nil || *t.TolerationSeconds > *ss.TolerationSeconds {
			return false
		}
	}
	switch ss.Operator {
	case v1.TolerationOpEqual, "":
		return t.Operator == v1.TolerationOpEqual && t.Value == ss.Value
	case v1.TolerationOpExists:
		return true
	default:
		return false
	}
}
