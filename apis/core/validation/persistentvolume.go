package validation

import (
	"path"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Name rules of the storage objects, as upstream's
// ValidatePersistentVolumeName and ValidateClassName.
var (
	ValidatePersistentVolumeName = apivalidation.NameIsDNSSubdomain
	ValidateClassName            = apivalidation.NameIsDNSSubdomain
)

var (
	supportedAccessModes   = []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOnce, corev1.ReadWriteOncePod}
	supportedReclaimPolicy = []corev1.PersistentVolumeReclaimPolicy{corev1.PersistentVolumeReclaimDelete,
		corev1.PersistentVolumeReclaimRecycle, corev1.PersistentVolumeReclaimRetain}
	supportedVolumeModes = []corev1.PersistentVolumeMode{corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem}
)

// validateAccessModes: at least one (required says with what message),
// each supported, ReadWriteOncePod alone.
func validateAccessModes(modes []corev1.PersistentVolumeAccessMode, required string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(modes) == 0 {
		allErrs = append(allErrs, field.Required(fldPath, required))
	}
	rwop, other := false, false
	for _, m := range modes {
		switch {
		case !slices.Contains(supportedAccessModes, m):
			allErrs = append(allErrs, field.NotSupported(fldPath, m, supportedAccessModes))
		case m == corev1.ReadWriteOncePod:
			rwop = true
		default:
			other = true
		}
	}
	if rwop && other {
		allErrs = append(allErrs, field.Forbidden(fldPath, "may not use ReadWriteOncePod with other access modes"))
	}
	return allErrs
}

// ValidatePersistentVolumeClaimSpec is upstream's: access modes, selector,
// a positive storage request (reported at resources[storage], upstream's
// internal path), class name, volume mode, data sources.
func ValidatePersistentVolumeClaimSpec(spec *corev1.PersistentVolumeClaimSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateAccessModes(spec.AccessModes, "at least 1 access mode is required", fldPath.Child("accessModes"))
	if spec.Selector != nil {
		allErrs = append(allErrs, metavalidation.ValidateLabelSelector(spec.Selector, metavalidation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))...)
	}
	storagePath := fldPath.Child("resources").Key(string(corev1.ResourceStorage))
	if q, ok := spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		allErrs = append(allErrs, field.Required(storagePath, ""))
	} else if q.Cmp(resource.Quantity{}) <= 0 {
		allErrs = append(allErrs, field.Invalid(storagePath, q.String(), isNotPositiveErrorMsg))
	}
	if spec.StorageClassName != nil && *spec.StorageClassName != "" {
		allErrs = append(allErrs, nameErrors(ValidateClassName, *spec.StorageClassName, fldPath.Child("storageClassName"))...)
	}
	if spec.VolumeMode != nil && !slices.Contains(supportedVolumeModes, *spec.VolumeMode) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("volumeMode"), *spec.VolumeMode, supportedVolumeModes))
	}
	if ds := spec.DataSource; ds != nil {
		allErrs = append(allErrs, validateDataSource(ds.Name, ds.Kind, ds.APIGroup, fldPath.Child("dataSource"))...)
	}
	if ref := spec.DataSourceRef; ref != nil {
		p := fldPath.Child("dataSourceRef")
		allErrs = append(allErrs, validateDataSource(ref.Name, ref.Kind, ref.APIGroup, p)...)
		if ref.Namespace != nil && *ref.Namespace != "" {
			allErrs = append(allErrs, nameErrors(ValidateNamespaceName, *ref.Namespace, p.Child("namespace"))...)
		}
	}
	if ref := spec.DataSourceRef; ref != nil && ref.Namespace != nil && *ref.Namespace != "" {
		if spec.DataSource != nil {
			allErrs = append(allErrs, field.Invalid(fldPath, fldPath.Child("dataSource"), "may not be specified when dataSourceRef.namespace is specified"))
		}
	} else if ds := spec.DataSource; ds != nil && ref != nil {
		if !reflect.DeepEqual(ds.APIGroup, ref.APIGroup) || ds.Kind != ref.Kind || ds.Name != ref.Name {
			allErrs = append(allErrs, field.Invalid(fldPath, fldPath.Child("dataSource"), "must match dataSourceRef"))
		}
	}
	if c := spec.VolumeAttributesClassName; c != nil && *c != "" {
		allErrs = append(allErrs, nameErrors(ValidateClassName, *c, fldPath.Child("volumeAttributesClassName"))...)
	}
	return allErrs
}

func validateDataSource(name, kind string, apiGroup *string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	}
	if kind == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("kind"), ""))
	}
	group := ""
	if apiGroup != nil {
		group = *apiGroup
	}
	if group == "" && kind != "PersistentVolumeClaim" {
		allErrs = append(allErrs, field.Invalid(fldPath, kind, "must be 'PersistentVolumeClaim' when referencing the default apiGroup"))
	}
	if group != "" {
		allErrs = append(allErrs, validateDNS1123Subdomain(group, fldPath.Child("apiGroup"))...)
	}
	return allErrs
}

// ValidatePersistentVolumeClaim checks a claim on create.
func ValidatePersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&pvc.ObjectMeta, true, ValidatePersistentVolumeName, field.NewPath("metadata"))
	return append(allErrs, ValidatePersistentVolumeClaimSpec(&pvc.Spec, field.NewPath("spec"))...)
}

// ValidatePersistentVolumeClaimUpdate is upstream's: the spec is immutable
// but for volumeName set once (the binder), the storage request of a bound
// claim (a resize; no lower than status.capacity, as
// RecoverVolumeExpansionFailure, GA, allows) and its volume attributes
// class; a storage class may be given once to a claim that had none.
func ValidatePersistentVolumeClaimUpdate(pvc, old *corev1.PersistentVolumeClaim) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&pvc.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, ValidatePersistentVolumeClaim(pvc)...)
	newSpec, oldSpec := pvc.Spec.DeepCopy(), old.Spec.DeepCopy()
	if oldSpec.VolumeName == "" {
		oldSpec.VolumeName = newSpec.VolumeName
	}
	oldAnn, hadAnn := old.Annotations[corev1.BetaStorageClassAnnotation]
	newAnn, hasAnn := pvc.Annotations[corev1.BetaStorageClassAnnotation]
	switch {
	case hadAnn && oldSpec.StorageClassName == nil && newSpec.StorageClassName != nil && *newSpec.StorageClassName == oldAnn && (!hasAnn || newAnn == oldAnn):
		// The beta annotation's class moves to the field.
		newSpec.StorageClassName = nil
	default:
		if hadAnn != hasAnn || oldAnn != newAnn {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("metadata", "annotations").Key(corev1.BetaStorageClassAnnotation), "field is immutable"))
		}
		if newSpec.StorageClassName != nil && oldSpec.StorageClassName == nil && (!hadAnn || *newSpec.StorageClassName == oldAnn) {
			oldSpec.StorageClassName = newSpec.StorageClassName
		}
	}
	if pvc.Status.Phase == corev1.ClaimBound && newSpec.Resources.Requests != nil {
		newSpec.Resources.Requests[corev1.ResourceStorage] = old.Spec.Resources.Requests[corev1.ResourceStorage]
	}
	if pvc.Status.Phase == corev1.ClaimBound {
		newSpec.VolumeAttributesClassName = oldSpec.VolumeAttributesClassName
	}
	if !apiequality.Semantic.DeepEqual(newSpec, oldSpec) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec"), "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"))
	}
	newSize, oldSize := pvc.Spec.Resources.Requests[corev1.ResourceStorage], old.Spec.Resources.Requests[corev1.ResourceStorage]
	if newSize.Cmp(oldSize) < 0 {
		if statusSize := old.Status.Capacity[corev1.ResourceStorage]; newSize.Cmp(statusSize) <= 0 {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than status.capacity"))
		}
	}
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(pvc.Spec.VolumeMode, old.Spec.VolumeMode, field.NewPath("volumeMode"))...)
	if old.Status.CurrentVolumeAttributesClassName != nil && !apiequality.Semantic.DeepEqual(old.Spec.VolumeAttributesClassName, pvc.Spec.VolumeAttributesClassName) {
		p := field.NewPath("spec", "volumeAttributesClassName")
		if c := pvc.Spec.VolumeAttributesClassName; c == nil {
			allErrs = append(allErrs, field.Forbidden(p, "update to nil is forbidden when status.currentVolumeAttributesClassName is not nil"))
		} else if *c == "" {
			allErrs = append(allErrs, field.Forbidden(p, "update to empty string is forbidden when status.currentVolumeAttributesClassName is not nil"))
		}
	}
	return allErrs
}

// ValidatePersistentVolumeClaimStatusUpdate checks a write of a claim's
// status: a resourceVersion, access modes, well-formed capacities.
func ValidatePersistentVolumeClaimStatusUpdate(pvc, old *corev1.PersistentVolumeClaim) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&pvc.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	if pvc.ResourceVersion == "" {
		allErrs = append(allErrs, field.Required(field.NewPath("resourceVersion"), ""))
	}
	if len(pvc.Spec.AccessModes) == 0 {
		allErrs = append(allErrs, field.Required(field.NewPath("Spec", "accessModes"), ""))
	}
	capPath := field.NewPath("status", "capacity")
	for _, r := range sortedNames(pvc.Status.Capacity) {
		allErrs = append(allErrs, validateResourceQuantityValue(r, pvc.Status.Capacity[r], capPath.Key(string(r)))...)
	}
	allocPath := field.NewPath("status", "allocatedResources")
	for _, r := range sortedNames(pvc.Status.AllocatedResources) {
		for _, msg := range validation.IsQualifiedName(string(r)) {
			allErrs = append(allErrs, field.Invalid(allocPath, string(r), msg))
		}
		allErrs = append(allErrs, validateResourceQuantityValue(r, pvc.Status.AllocatedResources[r], allocPath.Key(string(r)))...)
	}
	return allErrs
}

// ValidatePersistentVolume checks a volume on create: upstream's
// ValidatePersistentVolumeSpec for a standalone (not inline) volume.
func ValidatePersistentVolume(pv *corev1.PersistentVolume) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&pv.ObjectMeta, false, ValidatePersistentVolumeName, field.NewPath("metadata"))
	return append(allErrs, validatePersistentVolumeSpec(&pv.Spec, field.NewPath("spec"))...)
}

func validatePersistentVolumeSpec(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateAccessModes(spec.AccessModes, "", fldPath.Child("accessModes"))
	capPath := fldPath.Child("capacity")
	if len(spec.Capacity) == 0 {
		allErrs = append(allErrs, field.Required(capPath, ""))
	}
	if _, ok := spec.Capacity[corev1.ResourceStorage]; !ok || len(spec.Capacity) > 1 {
		allErrs = append(allErrs, field.NotSupported(capPath, spec.Capacity, []corev1.ResourceName{corev1.ResourceStorage}))
	}
	for _, r := range sortedNames(spec.Capacity) {
		q := spec.Capacity[r]
		if q.Cmp(resource.Quantity{}) <= 0 {
			allErrs = append(allErrs, field.Invalid(capPath.Key(string(r)), q.String(), isNotPositiveErrorMsg))
		}
	}
	if p := spec.PersistentVolumeReclaimPolicy; p != "" && !slices.Contains(supportedReclaimPolicy, p) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("persistentVolumeReclaimPolicy"), p, supportedReclaimPolicy))
	}
	nodeAffinity := false
	if na := spec.NodeAffinity; na != nil {
		nodeAffinity = true
		if na.Required == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("nodeAffinity", "required"), "must specify required node constraints"))
		} else {
			allErrs = append(allErrs, validateNodeSelector(na.Required, fldPath.Child("nodeAffinity", "required"))...)
		}
	}
	allErrs = append(allErrs, validatePersistentVolumeSource(&spec.PersistentVolumeSource, nodeAffinity, fldPath)...)
	if spec.HostPath != nil && path.Clean(spec.HostPath.Path) == "/" && spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRecycle {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("persistentVolumeReclaimPolicy"), "may not be 'recycle' for a hostPath mount of '/'"))
	}
	if spec.StorageClassName != "" {
		allErrs = append(allErrs, nameErrors(ValidateClassName, spec.StorageClassName, fldPath.Child("storageClassName"))...)
	}
	if spec.VolumeMode != nil && !slices.Contains(supportedVolumeModes, *spec.VolumeMode) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("volumeMode"), *spec.VolumeMode, supportedVolumeModes))
	}
	if c := spec.VolumeAttributesClassName; c != nil {
		if *c == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("volumeAttributesClassName"), "an empty string is disallowed"))
		} else {
			allErrs = append(allErrs, nameErrors(ValidateClassName, *c, fldPath.Child("volumeAttributesClassName"))...)
		}
		if spec.CSI == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("csi"), "has to be specified when using volumeAttributesClassName"))
		}
	}
	return allErrs
}

// validatePersistentVolumeSource: exactly one source. The sources Kite can
// mount (hostPath, local) and the common network ones (nfs, csi) are
// checked field by field as upstream; the others (cloud disks, in-tree
// plugins long removed) only count.
func validatePersistentVolumeSource(src *corev1.PersistentVolumeSource, nodeAffinity bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	sources := []struct {
		name     string
		set      bool
		validate func(*field.Path) field.ErrorList
	}{
		{"hostPath", src.HostPath != nil, func(p *field.Path) field.ErrorList { return validateHostPathVolumeSource(src.HostPath, p) }},
		{"gcePersistentDisk", src.GCEPersistentDisk != nil, nil},
		{"awsElasticBlockStore", src.AWSElasticBlockStore != nil, nil},
		{"glusterfs", src.Glusterfs != nil, nil},
		{"flocker", src.Flocker != nil, nil},
		{"nfs", src.NFS != nil, func(p *field.Path) field.ErrorList { return validateNFSVolumeSource(src.NFS, p) }},
		{"rbd", src.RBD != nil, nil},
		{"quobyte", src.Quobyte != nil, nil},
		{"cephFS", src.CephFS != nil, nil},
		{"iscsi", src.ISCSI != nil, nil},
		{"cinder", src.Cinder != nil, nil},
		{"fc", src.FC != nil, nil},
		{"flexVolume", src.FlexVolume != nil, nil},
		{"azureFile", src.AzureFile != nil, nil},
		{"vsphereVolume", src.VsphereVolume != nil, nil},
		{"photonPersistentDisk", src.PhotonPersistentDisk != nil, nil},
		{"portworxVolume", src.PortworxVolume != nil, nil},
		{"azureDisk", src.AzureDisk != nil, nil},
		{"scaleIO", src.ScaleIO != nil, nil},
		{"local", src.Local != nil, func(p *field.Path) field.ErrorList {
			var errs field.ErrorList
			if src.Local.Path == "" {
				errs = append(errs, field.Required(p.Child("path"), ""))
			} else {
				errs = append(errs, validatePathNoBacksteps(src.Local.Path, p.Child("path"))...)
			}
			if !nodeAffinity {
				errs = append(errs, field.Required(fldPath.Child("nodeAffinity"), "Local volume requires node affinity"))
			}
			return errs
		}},
		{"storageos", src.StorageOS != nil, nil},
		{"csi", src.CSI != nil, func(p *field.Path) field.ErrorList {
			var errs field.ErrorList
			if src.CSI.Driver == "" {
				errs = append(errs, field.Required(p.Child("driver"), ""))
			} else {
				errs = append(errs, validateDNS1123Subdomain(src.CSI.Driver, p.Child("driver"))...)
			}
			if src.CSI.VolumeHandle == "" {
				errs = append(errs, field.Required(p.Child("volumeHandle"), ""))
			}
			return errs
		}},
	}
	n := 0
	for _, s := range sources {
		if !s.set {
			continue
		}
		p := fldPath.Child(s.name)
		// upstream counts flexVolume without the "more than 1" check.
		if n > 0 && s.name != "flexVolume" {
			allErrs = append(allErrs, field.Forbidden(p, "may not specify more than 1 volume type"))
			continue
		}
		n++
		if s.validate != nil {
			allErrs = append(allErrs, s.validate(p)...)
		}
	}
	if n == 0 {
		allErrs = append(allErrs, field.Required(fldPath, "must specify a volume type"))
	}
	return allErrs
}

// ValidatePersistentVolumeUpdate: valid as on create, the source and the
// volume mode immutable, the node affinity too once set
// (MutablePVNodeAffinity is alpha, off), the attributes class never
// removed.
func ValidatePersistentVolumeUpdate(pv, old *corev1.PersistentVolume) field.ErrorList {
	allErrs := ValidatePersistentVolume(pv)
	newSrc := pv.Spec.PersistentVolumeSource
	if old.Spec.CSI != nil && old.Spec.CSI.ControllerExpandSecretRef == nil && newSrc.CSI != nil && newSrc.CSI.ControllerExpandSecretRef != nil {
		// A controller expand secret may be added later (upstream too).
		csi := *newSrc.CSI
		csi.ControllerExpandSecretRef = nil
		newSrc.CSI = &csi
	}
	if !apiequality.Semantic.DeepEqual(newSrc, old.Spec.PersistentVolumeSource) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "persistentvolumesource"), "spec.persistentvolumesource is immutable after creation"))
	}
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(pv.Spec.VolumeMode, old.Spec.VolumeMode, field.NewPath("volumeMode"))...)
	if old.Spec.NodeAffinity != nil && !apiequality.Semantic.DeepEqual(pv.Spec.NodeAffinity, old.Spec.NodeAffinity) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("nodeAffinity"), pv.Spec.NodeAffinity, "field is immutable, except for updating from beta label to GA"))
	}
	if old.Spec.VolumeAttributesClassName != nil && pv.Spec.VolumeAttributesClassName == nil {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "volumeAttributesClassName"), "update from non-nil value to nil is forbidden"))
	}
	return allErrs
}

// ValidatePersistentVolumeStatusUpdate checks a write of a volume's status.
func ValidatePersistentVolumeStatusUpdate(pv, old *corev1.PersistentVolume) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&pv.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	if pv.ResourceVersion == "" {
		allErrs = append(allErrs, field.Required(field.NewPath("resourceVersion"), ""))
	}
	return allErrs
}
