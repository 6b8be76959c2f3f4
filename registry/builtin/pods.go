package builtin

import (
	"context"
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kite-project/kite/apis/core/defaults"
	"github.com/kite-project/kite/apis/core/qos"
	"github.com/kite-project/kite/apis/core/validation"
	"github.com/kite-project/kite/registry"
)

// podFieldLabels are the fields a pod field selector may use (upstream
// pkg/registry/core/pod/strategy.go ToSelectableFields).
var podFieldLabels = []string{
	"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
	"spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName",
}

// Pods returns the strategy of core/v1 pods.
func Pods() *registry.Strategy {
	return &registry.Strategy{
		Kind:              v1.SchemeGroupVersion.WithKind("Pod"),
		Resource:          "pods",
		SingularName:      "pod",
		ShortNames:        []string{"po"},
		Categories:        []string{"all"},
		Namespaced:        true,
		New:               func() runtime.Object { return &v1.Pod{} },
		NewList:           func() runtime.Object { return &v1.PodList{} },
		Default:           func(obj runtime.Object) { defaultPod(obj.(*v1.Pod)) },
		ValidatesMetadata: true,
		PrepareForCreate:  preparePodForCreate,
		PrepareForUpdate:  preparePodForUpdate,
		Validate:          func(obj runtime.Object) field.ErrorList { return validation.ValidatePod(obj.(*v1.Pod)) },
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidatePodUpdate(obj.(*v1.Pod), old.(*v1.Pod))
		},
		SelectableFields:         podSelectableFields,
		FieldLabels:              podFieldLabels,
		IndexFields:              []string{"spec.nodeName"},
		Intern:                   InternPod,
		GracePeriod:              podGracePeriod,
		AllowUnconditionalUpdate: true,
		ReturnDeletedObject:      true,
		Subresources: map[string]*registry.Subresource{
			"status": {PrepareForUpdate: preparePodStatusUpdate, ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return validation.ValidatePodStatusUpdate(obj.(*v1.Pod), old.(*v1.Pod))
			}},
			"binding": {
				Kind:           v1.SchemeGroupVersion.WithKind("Binding"),
				New:            func() runtime.Object { return &v1.Binding{} },
				ValidateUpdate: func(obj, old runtime.Object) field.ErrorList { return nil },
				Create:         bindPod,
			},
			"eviction":            evictionSubresource(),
			"ephemeralcontainers": ephemeralContainersSubresource(),
			"resize":              resizeSubresource(),
		},
	}
}

func podSelectableFields(obj runtime.Object) fields.Set {
	pod := obj.(*v1.Pod)
	podIP := ""
	if len(pod.Status.PodIPs) > 0 {
		podIP = pod.Status.PodIPs[0].IP
	} else {
		podIP = pod.Status.PodIP
	}
	return fields.Set{
		"spec.nodeName":            pod.Spec.NodeName,
		"spec.restartPolicy":       string(pod.Spec.RestartPolicy),
		"spec.schedulerName":       pod.Spec.SchedulerName,
		"spec.serviceAccountName":  pod.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(pod.Spec.HostNetwork),
		"status.phase":             string(pod.Status.Phase),
		"status.podIP":             podIP,
		"status.nominatedNodeName": pod.Status.NominatedNodeName,
	}
}

func preparePodForCreate(obj runtime.Object) {
	pod := obj.(*v1.Pod)
	pod.Generation = 1
	// Pod-level resources are completed before the QoS class is taken
	// from them, as upstream's PrepareForCreate.
	defaults.PodLevelResources(pod)
	pod.Status = v1.PodStatus{Phase: v1.PodPending, QOSClass: qos.ComputePodQOS(pod)}
}

func preparePodForUpdate(obj, old runtime.Object) {
	pod, oldPod := obj.(*v1.Pod), old.(*v1.Pod)
	pod.Status = oldPod.Status
	// A client that knows nothing of pod-level resources drops them
	// from its update; they are kept, as upstream's PrepareForUpdate with
	// PodLevelResourcesFixDefaulting (on in 1.37).
	if pod.Spec.Resources == nil && oldPod.Spec.Resources != nil {
		pod.Spec.Resources = oldPod.Spec.Resources.DeepCopy()
	}
	if !apiequality.Semantic.DeepEqual(pod.Spec, oldPod.Spec) {
		pod.Generation = oldPod.Generation + 1
	}
}

// preparePodStatusUpdate keeps everything but status (upstream
// podStatusStrategy), and back-fills what a status writer may omit.
func preparePodStatusUpdate(obj, old runtime.Object) {
	pod, oldPod := obj.(*v1.Pod), old.(*v1.Pod)
	pod.Spec = oldPod.Spec
	pod.OwnerReferences = oldPod.OwnerReferences
	if pod.Status.QOSClass == "" {
		pod.Status.QOSClass = oldPod.Status.QOSClass
	}
	if pod.Status.ObservedGeneration == 0 {
		pod.Status.ObservedGeneration = oldPod.Status.ObservedGeneration
	}
}

// podGracePeriod is upstream's CheckGracefulDelete for pods: the grace
// period comes from the request, else the pod spec; a pod not bound to a
// node, or one that has finished, goes at once.
func podGracePeriod(obj runtime.Object, opts *metav1.DeleteOptions) int64 {
	pod := obj.(*v1.Pod)
	var grace int64
	switch {
	case opts.GracePeriodSeconds != nil:
		grace = *opts.GracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		grace = 0
	}
	if grace < 0 {
		grace = 1
	}
	return grace
}

// bindPod is POST pods/<name>/binding: it assigns the pod to a node once.
func bindPod(ctx context.Context, store *registry.Store, namespace, name string, body runtime.Object, opts *metav1.CreateOptions) (runtime.Object, error) {
	binding, ok := body.(*v1.Binding)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected a Binding, got %T", body))
	}
	if binding.Name != "" && binding.Name != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the binding (%s) does not match the name on the URL (%s)", binding.Name, name))
	}
	if errs := validation.ValidatePodBinding(binding); len(errs) > 0 {
		return nil, apierrors.NewInvalid(v1.SchemeGroupVersion.WithKind("Binding").GroupKind(), name, errs)
	}
	gr := store.Strategy().GroupResource()
	_, _, err := store.Update(ctx, &registry.UpdateRequest{
		Namespace:   namespace,
		Name:        name,
		Subresource: "binding",
		Admitted:    true,
		Options:     metav1.UpdateOptions{DryRun: opts.DryRun, FieldManager: opts.FieldManager},
		Object: func(_ context.Context, existing runtime.Object) (runtime.Object, error) {
			pod := existing.(*v1.Pod)
			switch {
			case binding.UID != "" && binding.UID != pod.UID:
				return nil, apierrors.NewConflict(gr, name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", binding.UID, pod.UID))
			case binding.ResourceVersion != "" && binding.ResourceVersion != pod.ResourceVersion:
				return nil, apierrors.NewConflict(gr, name, fmt.Errorf("%s", registry.OptimisticLockErrorMsg))
			case pod.DeletionTimestamp != nil:
				return nil, apierrors.NewConflict(gr, name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", name))
			case pod.Spec.NodeName != "":
				return nil, apierrors.NewConflict(gr, name, fmt.Errorf("pod %v is already assigned to node %q", name, pod.Spec.NodeName))
			case len(pod.Spec.SchedulingGates) > 0:
				return nil, apierrors.NewConflict(gr, name, fmt.Errorf("pod %v has non-empty .spec.schedulingGates", name))
			}
			pod.Spec.NodeName = binding.Target.Name
			for k, v := range binding.Annotations {
				if pod.Annotations == nil {
					pod.Annotations = map[string]string{}
				}
				pod.Annotations[k] = v
			}
			setPodCondition(pod, v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: metav1.Now()})
			return pod, nil
		},
	})
	if err != nil {
		return nil, err
	}
	return &metav1.Status{Status: metav1.StatusSuccess, Code: 201}, nil
}

func setPodCondition(pod *v1.Pod, c v1.PodCondition) {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == c.Type {
			if pod.Status.Conditions[i].Status == c.Status {
				c.LastTransitionTime = pod.Status.Conditions[i].LastTransitionTime
			}
			pod.Status.Conditions[i] = c
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, c)
}
