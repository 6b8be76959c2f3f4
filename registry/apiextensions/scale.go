package apiextensions

import (
	"fmt"
	"math"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kite-project/kite/registry"
)

// scaleSubresource is upstream's ScaleREST for custom resources: an
// autoscaling/v1 Scale read from specReplicasPath, statusReplicasPath
// (0 when absent) and labelSelectorPath; writing it changes only the value
// at specReplicasPath, and the rest of the custom resource's update rules
// (generation, validation, negative replicas included) apply.
func scaleSubresource(crd *apiextensionsv1.CustomResourceDefinition, sc *apiextensionsv1.CustomResourceSubresourceScale, prepare func(obj, old runtime.Object)) *registry.Subresource {
	spec, status := fieldsOf(sc.SpecReplicasPath), fieldsOf(sc.StatusReplicasPath)
	var selector []string
	if sc.LabelSelectorPath != nil {
		selector = fieldsOf(*sc.LabelSelectorPath)
	}
	view := func(u *unstructured.Unstructured) (*autoscalingv1.Scale, bool) {
		replicas, found, err := unstructured.NestedInt64(u.Object, spec...)
		statusReplicas, _, _ := unstructured.NestedInt64(u.Object, status...)
		var sel string
		if selector != nil {
			sel, _, _ = unstructured.NestedString(u.Object, selector...)
		}
		return &autoscalingv1.Scale{
			TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
			ObjectMeta: metav1.ObjectMeta{
				Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
				ResourceVersion: u.GetResourceVersion(), CreationTimestamp: u.GetCreationTimestamp(),
			},
			Spec:   autoscalingv1.ScaleSpec{Replicas: int32(replicas)},
			Status: autoscalingv1.ScaleStatus{Replicas: int32(statusReplicas), Selector: sel},
		}, err == nil && found
	}
	return &registry.Subresource{
		Kind:             autoscalingv1.SchemeGroupVersion.WithKind("Scale"),
		New:              func() runtime.Object { return &autoscalingv1.Scale{} },
		PrepareForUpdate: prepare,
		ReplicasPaths:    replicasPaths(crd),
		View: func(parent runtime.Object) (runtime.Object, error) {
			scale, found := view(parent.(*unstructured.Unstructured))
			if !found {
				return nil, apierrors.NewInternalError(fmt.Errorf("the spec replicas field %q does not exist", sc.SpecReplicasPath))
			}
			return scale, nil
		},
		// An update may set replicas where there are none yet; a Scale
		// that leaves them unset is refused in Apply, as upstream.
		ViewForUpdate: func(parent runtime.Object) (runtime.Object, error) {
			scale, found := view(parent.(*unstructured.Unstructured))
			if !found {
				scale.Spec.Replicas = replicasUnset
			}
			return scale, nil
		},
		Apply: func(parent, view runtime.Object) (runtime.Object, error) {
			scale, err := asScale(view)
			if err != nil {
				return nil, err
			}
			if scale.Spec.Replicas == replicasUnset {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("the spec replicas field %q cannot be empty", sc.SpecReplicasPath))
			}
			u := parent.(*unstructured.Unstructured)
			if err := unstructured.SetNestedField(u.Object, int64(scale.Spec.Replicas), spec...); err != nil {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("set %s: %v", sc.SpecReplicasPath, err))
			}
			if rv := scale.ResourceVersion; rv != "" {
				u.SetResourceVersion(rv) // the client's precondition
			}
			return u, nil
		},
	}
}

// replicasUnset stands for spec replicas a custom resource does not have
// yet (upstream's invalidSpecReplicas, the smallest int32).
const replicasUnset = math.MinInt32

func asScale(obj runtime.Object) (*autoscalingv1.Scale, error) {
	switch v := obj.(type) {
	case *autoscalingv1.Scale:
		return v, nil
	case *unstructured.Unstructured:
		s := &autoscalingv1.Scale{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(v.Object, s); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("decode Scale: %v", err))
		}
		return s, nil
	}
	return nil, apierrors.NewBadRequest(fmt.Sprintf("a Scale was expected, got %T", obj))
}

// replicasPaths maps each version of crd to its spec replicas field (nil
// for a version without scale), as upstream's crdHandler does for the
// scale subresource's managed fields.
func replicasPaths(crd *apiextensionsv1.CustomResourceDefinition) managedfields.ResourcePathMappings {
	paths := managedfields.ResourcePathMappings{}
	for _, v := range crd.Spec.Versions {
		gv := schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}.String()
		if v.Subresources == nil || v.Subresources.Scale == nil {
			paths[gv] = nil
			continue
		}
		var path fieldpath.Path
		for _, name := range fieldsOf(v.Subresources.Scale.SpecReplicasPath) {
			path = append(path, fieldpath.PathElement{FieldName: &name})
		}
		paths[gv] = path
	}
	return paths
}

// fieldsOf splits a simple JSON path (".spec.replicas").
func fieldsOf(path string) []string { return strings.Split(strings.TrimPrefix(path, "."), ".") }
