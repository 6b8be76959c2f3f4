package builtin

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apiserver/pkg/admission"

	storagedefaults "github.com/kite-project/kite/apis/storage/defaults"
	"github.com/kite-project/kite/registry"
)

// Upstream's names (plugin/pkg/admission/storage).
const (
	PluginDefaultStorageClass          = "DefaultStorageClass"
	PluginStorageObjectInUseProtection = "StorageObjectInUseProtection"
	// PVCProtectionFinalizer keeps a claim while a pod uses it.
	PVCProtectionFinalizer = "kubernetes.io/pvc-protection"
	// PVProtectionFinalizer keeps a volume while a claim is bound to it.
	PVProtectionFinalizer = "kubernetes.io/pv-protection"

	betaClaimClassAnnotation = "volume.beta.kubernetes.io/storage-class"
)

// StorageAdmissionPlugins are the storage admission plugins by their
// upstream names, for AdmissionConfig.Plugins: DefaultStorageClass reads
// the StorageClasses' Store through stores (called per request, so it may
// be filled in after the chain is built).
func StorageAdmissionPlugins(stores func(groupResource string) *registry.Store) map[string]registry.AdmissionPlugin {
	return map[string]registry.AdmissionPlugin{
		PluginDefaultStorageClass:          DefaultStorageClassPlugin(func() *registry.Store { return stores("storageclasses.storage.k8s.io") }),
		PluginStorageObjectInUseProtection: StorageObjectInUseProtectionPlugin(),
	}
}

// DefaultStorageClassPlugin is upstream's DefaultStorageClass: a claim
// created without a class (neither spec.storageClassName nor the beta
// annotation) gets the default StorageClass, the newest of those
// annotated storageclass.kubernetes.io/is-default-class=true (by name
// when created in the same instant); none leaves it without.
func DefaultStorageClassPlugin(classes func() *registry.Store) registry.AdmissionPlugin {
	return registry.AdmissionPlugin{
		Name:    PluginDefaultStorageClass,
		Handles: func(op admission.Operation) bool { return op == admission.Create },
		Admit: func(ctx context.Context, a admission.Attributes) error {
			if a.GetResource().GroupResource() != v1.Resource("persistentvolumeclaims") || a.GetSubresource() != "" {
				return nil
			}
			pvc, ok := a.GetObject().(*v1.PersistentVolumeClaim)
			if !ok || pvc.Spec.StorageClassName != nil {
				return nil
			}
			if _, ok := pvc.Annotations[betaClaimClassAnnotation]; ok {
				return nil
			}
			st := classes()
			if st == nil {
				return nil
			}
			obj, err := st.List(ctx, "", &metainternalversion.ListOptions{ResourceVersion: "0"})
			if err != nil {
				return admission.NewForbidden(a, fmt.Errorf("list storage classes: %w", err))
			}
			if def := storagedefaults.DefaultClass(obj.(*storagev1.StorageClassList).Items); def != "" {
				pvc.Spec.StorageClassName = &def
			}
			return nil
		},
	}
}

// StorageObjectInUseProtectionPlugin is upstream's: a claim is created
// with the kubernetes.io/pvc-protection finalizer and a volume with
// kubernetes.io/pv-protection, which the protection controllers remove
// once no pod uses the claim or no claim is bound to the volume.
func StorageObjectInUseProtectionPlugin() registry.AdmissionPlugin {
	return registry.AdmissionPlugin{
		Name:    PluginStorageObjectInUseProtection,
		Handles: func(op admission.Operation) bool { return op == admission.Create },
		Admit: func(_ context.Context, a admission.Attributes) error {
			if a.GetSubresource() != "" {
				return nil
			}
			switch o := a.GetObject().(type) {
			case *v1.PersistentVolumeClaim:
				if a.GetResource().GroupResource() == v1.Resource("persistentvolumeclaims") && !slices.Contains(o.Finalizers, PVCProtectionFinalizer) {
					o.Finalizers = append(o.Finalizers, PVCProtectionFinalizer)
				}
			case *v1.PersistentVolume:
				if a.GetResource().GroupResource() == v1.Resource("persistentvolumes") && !slices.Contains(o.Finalizers, PVProtectionFinalizer) {
					o.Finalizers = append(o.Finalizers, PVProtectionFinalizer)
				}
			}
			return nil
		},
	}
}
