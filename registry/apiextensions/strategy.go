package apiextensions

import (
	"context"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	internal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kite-project/kite/registry"
)

// CleanupFinalizer is the finalizer the first DELETE of a CRD adds; the
// CRD controller (controllers/crd) removes it once every custom resource
// is gone.
const CleanupFinalizer = apiextensionsv1.CustomResourceCleanupFinalizer

// Strategy returns the strategy of apiextensions.k8s.io/v1
// customresourcedefinitions, as upstream's
// registry/customresourcedefinition: create clears status and records the
// storage version in storedVersions, an update keeps the status, bumps
// generation on a spec change and adds a new storage version; the status
// subresource writes status only. Validation is upstream's.
func Strategy(now func() time.Time) *registry.Strategy {
	if now == nil {
		now = time.Now
	}
	return &registry.Strategy{
		Kind:         apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"),
		Resource:     "customresourcedefinitions",
		SingularName: "customresourcedefinition",
		ShortNames:   []string{"crd", "crds"},
		Categories:   []string{"api-extensions"},
		New:          func() runtime.Object { return &apiextensionsv1.CustomResourceDefinition{} },
		NewList:      func() runtime.Object { return &apiextensionsv1.CustomResourceDefinitionList{} },
		Default: func(obj runtime.Object) {
			apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(obj.(*apiextensionsv1.CustomResourceDefinition))
		},
		ValidatesMetadata: true,
		ApplySchema:       applySchema,
		PrepareForCreate: func(obj runtime.Object) {
			crd := obj.(*apiextensionsv1.CustomResourceDefinition)
			crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
			crd.Generation = 1
			recordStorageVersion(crd)
		},
		PrepareForUpdate: func(obj, old runtime.Object) {
			crd, oldCRD := obj.(*apiextensionsv1.CustomResourceDefinition), old.(*apiextensionsv1.CustomResourceDefinition)
			crd.Status = oldCRD.Status
			if !apiequality.Semantic.DeepEqual(crd.Spec, oldCRD.Spec) {
				crd.Generation = oldCRD.Generation + 1
			}
			recordStorageVersion(crd)
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			in, errs := toInternal(obj)
			if in == nil {
				return errs
			}
			return validation.ValidateCustomResourceDefinition(context.Background(), in)
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			in, errs := toInternal(obj)
			oldIn, oldErrs := toInternal(old)
			if in == nil || oldIn == nil {
				return append(errs, oldErrs...)
			}
			return validation.ValidateCustomResourceDefinitionUpdate(context.Background(), in, oldIn)
		},
		MarkForDeletion: markForDeletion(now),
		Subresources: map[string]*registry.Subresource{
			"status": {
				// Upstream's status strategy resets the metadata from
				// the new object itself (a no-op), so a /status write
				// changes metadata too: its CRD finalizer removes the
				// cleanup finalizer that way, and clients see the same
				// here. Only the spec is kept.
				PrepareForUpdate: func(obj, old runtime.Object) {
					obj.(*apiextensionsv1.CustomResourceDefinition).Spec = old.(*apiextensionsv1.CustomResourceDefinition).Spec
				},
				ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
					in, errs := statusToInternal(obj)
					oldIn, oldErrs := statusToInternal(old)
					if in == nil || oldIn == nil {
						return append(errs, oldErrs...)
					}
					return validation.ValidateUpdateCustomResourceDefinitionStatus(context.Background(), in, oldIn)
				},
			},
		},
	}
}

// recordStorageVersion adds the storage version to status.storedVersions
// when it is not there yet.
func recordStorageVersion(crd *apiextensionsv1.CustomResourceDefinition) {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			if !apihelpers.IsStoredVersion(crd, v.Name) {
				crd.Status.StoredVersions = append(crd.Status.StoredVersions, v.Name)
			}
			return
		}
	}
}

// toInternal converts a v1 CRD to the internal type upstream validates.
func toInternal(obj runtime.Object) (*internal.CustomResourceDefinition, field.ErrorList) {
	out := &internal.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(obj.(*apiextensionsv1.CustomResourceDefinition), out, nil); err != nil {
		return nil, field.ErrorList{field.Invalid(field.NewPath("spec"), nil, err.Error())}
	}
	return out, nil
}

// statusToInternal converts what status validation reads, metadata and
// status, to the internal type; the spec, whose conversion costs more than
// the validation (schemas are large), stays empty.
func statusToInternal(obj runtime.Object) (*internal.CustomResourceDefinition, field.ErrorList) {
	crd := obj.(*apiextensionsv1.CustomResourceDefinition)
	out := &internal.CustomResourceDefinition{ObjectMeta: crd.ObjectMeta}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinitionStatus_To_apiextensions_CustomResourceDefinitionStatus(&crd.Status, &out.Status, nil); err != nil {
		return nil, field.ErrorList{field.Invalid(field.NewPath("status"), nil, err.Error())}
	}
	return out, nil
}

// markForDeletion is upstream's CRD delete: the first DELETE sets
// deletionTimestamp, adds the cleanup finalizer and the condition
// Terminating=True/InstanceDeletionPending and leaves the CRD; the CRD
// controller deletes the custom resources and then removes the finalizer.
func markForDeletion(now func() time.Time) func(obj runtime.Object, opts *metav1.DeleteOptions) (func(runtime.Object), error) {
	return func(obj runtime.Object, _ *metav1.DeleteOptions) (func(runtime.Object), error) {
		if obj.(*apiextensionsv1.CustomResourceDefinition).DeletionTimestamp != nil {
			// Already deleting: the generic deletion, which keeps it
			// while finalizers remain.
			return nil, nil
		}
		return func(obj runtime.Object) {
			crd := obj.(*apiextensionsv1.CustomResourceDefinition)
			t := metav1.NewTime(now())
			crd.DeletionTimestamp = &t
			zero := int64(0)
			crd.DeletionGracePeriodSeconds = &zero
			if !apihelpers.CRDHasFinalizer(crd, CleanupFinalizer) {
				crd.Finalizers = append(crd.Finalizers, CleanupFinalizer)
			}
			apihelpers.SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{
				Type:    apiextensionsv1.Terminating,
				Status:  apiextensionsv1.ConditionTrue,
				Reason:  "InstanceDeletionPending",
				Message: "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
			})
		}, nil
	}
}
