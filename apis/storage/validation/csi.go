package validation

// Upstream's validation of storage.k8s.io/v1 CSIDrivers, CSINodes,
// CSIStorageCapacities, VolumeAttachments and VolumeAttributesClasses
// (k8s.io/kubernetes/pkg/apis/storage/validation), ported to the v1 types
// with its field paths and messages; metadata is the Store's.

import (
	"fmt"
	"math"
	"slices"

	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	csiDriverNameMaxLength        = 63
	csiNodeIDMaxLength            = 192
	maxAttachedVolumeMetadataSize = 256 * (1 << 10)
	maxVolumeErrorMessageSize     = 1024
)

// ValidateCSIDriverName is upstream's: a DNS-1123 subdomain of at most 63
// characters.
func ValidateCSIDriverName(name string, prefix bool) []string {
	msgs := apivalidation.NameIsDNSSubdomain(name, prefix)
	if len(name) > csiDriverNameMaxLength {
		msgs = append(msgs, validation.MaxLenError(csiDriverNameMaxLength))
	}
	return msgs
}

func validateDriverName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var allErrs field.ErrorList
	if len(name) > csiDriverNameMaxLength {
		allErrs = append(allErrs, field.TooLong(fldPath, "", csiDriverNameMaxLength))
	}
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	return allErrs
}

// ValidateCSIDriver is upstream's ValidateCSIDriver.
func ValidateCSIDriver(d *storagev1.CSIDriver) field.ErrorList {
	spec, fldPath := &d.Spec, field.NewPath("spec")
	var allErrs field.ErrorList
	for _, req := range []struct {
		v    *bool
		name string
	}{{spec.AttachRequired, "attachedRequired"}, {spec.PodInfoOnMount, "podInfoOnMount"}, {spec.StorageCapacity, "storageCapacity"}} {
		if req.v == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child(req.name), ""))
		}
	}
	supported := []string{string(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy), string(storagev1.FileFSGroupPolicy), string(storagev1.NoneFSGroupPolicy)}
	if spec.FSGroupPolicy == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("fsGroupPolicy"), ""))
	} else if !slices.Contains(supported, string(*spec.FSGroupPolicy)) {
		slices.Sort(supported)
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("fsGroupPolicy"), *spec.FSGroupPolicy, supported))
	}
	audiences := map[string]bool{}
	for i, tr := range spec.TokenRequests {
		p := fldPath.Child("tokenRequests").Index(i)
		if audiences[tr.Audience] {
			allErrs = append(allErrs, field.Duplicate(p.Child("audience"), tr.Audience))
		}
		audiences[tr.Audience] = true
		if tr.ExpirationSeconds != nil {
			if *tr.ExpirationSeconds < 600 {
				allErrs = append(allErrs, field.Invalid(p.Child("expirationSeconds"), *tr.ExpirationSeconds, "may not specify a duration less than 10 minutes"))
			} else if *tr.ExpirationSeconds > 1<<32 {
				allErrs = append(allErrs, field.Invalid(p.Child("expirationSeconds"), *tr.ExpirationSeconds, "may not specify a duration larger than 2^32 seconds"))
			}
		}
	}
	for _, mode := range spec.VolumeLifecycleModes {
		if mode != storagev1.VolumeLifecyclePersistent && mode != storagev1.VolumeLifecycleEphemeral {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("volumeLifecycleModes"), mode, []string{string(storagev1.VolumeLifecycleEphemeral), string(storagev1.VolumeLifecyclePersistent)}))
		}
	}
	if p := spec.NodeAllocatableUpdatePeriodSeconds; p != nil && *p < 10 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("nodeAllocatableUpdatePeriodSeconds"), *p, "must be greater than or equal to 10 seconds"))
	}
	if s := spec.ServiceAccountTokenInSecrets; s != nil && *s && len(spec.TokenRequests) == 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("serviceAccountTokenInSecrets"), s, "serviceAccountTokenInSecrets is set but no tokenRequests are specified"))
	}
	return allErrs
}

// ValidateCSIDriverUpdate is upstream's: attachRequired and the lifecycle
// modes are immutable.
func ValidateCSIDriverUpdate(d, old *storagev1.CSIDriver) field.ErrorList {
	allErrs := ValidateCSIDriver(d)
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(d.Spec.AttachRequired, old.Spec.AttachRequired, field.NewPath("spec", "attachedRequired"))...)
	return append(allErrs, apivalidation.ValidateImmutableField(d.Spec.VolumeLifecycleModes, old.Spec.VolumeLifecycleModes, field.NewPath("spec", "volumeLifecycleModes"))...)
}

// ValidateCSINode is upstream's ValidateCSINode.
func ValidateCSINode(n *storagev1.CSINode) field.ErrorList {
	var allErrs field.ErrorList
	fldPath := field.NewPath("spec", "drivers")
	names := map[string]bool{}
	for i, d := range n.Spec.Drivers {
		p := fldPath.Index(i)
		allErrs = append(allErrs, validateDriverName(d.Name, p.Child("name"))...)
		if d.NodeID == "" {
			allErrs = append(allErrs, field.Required(p.Child("nodeID"), d.NodeID))
		} else if len(d.NodeID) > csiNodeIDMaxLength {
			allErrs = append(allErrs, field.Invalid(p.Child("nodeID"), d.NodeID, fmt.Sprintf("must be %d characters or less", csiNodeIDMaxLength)))
		}
		if d.Allocatable != nil && d.Allocatable.Count != nil && *d.Allocatable.Count < 0 {
			allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*d.Allocatable.Count), p.Child("allocatable", "count"))...)
		}
		if names[d.Name] {
			allErrs = append(allErrs, field.Duplicate(p.Child("name"), d.Name))
		}
		names[d.Name] = true
		keys := map[string]bool{}
		for _, key := range d.TopologyKeys {
			if key == "" {
				allErrs = append(allErrs, field.Required(p.Child("topologyKeys"), key))
			}
			if keys[key] {
				allErrs = append(allErrs, field.Duplicate(p.Child("topologyKeys"), key))
			}
			keys[key] = true
			allErrs = append(allErrs, metav1validation.ValidateLabelName(key, p.Child("topologyKeys"))...)
		}
	}
	return allErrs
}

// ValidateCSINodeUpdate is upstream's: a driver's entry may not change but
// for its allocatable count.
func ValidateCSINodeUpdate(n, old *storagev1.CSINode) field.ErrorList {
	allErrs := ValidateCSINode(n)
	for _, od := range old.Spec.Drivers {
		for _, nd := range n.Spec.Drivers {
			if od.Name != nd.Name {
				continue
			}
			a, b := od.DeepCopy(), nd.DeepCopy()
			a.Allocatable, b.Allocatable = nil, nil
			allErrs = append(allErrs, apivalidation.ValidateImmutableField(*b, *a, field.NewPath("spec").Child("drivers"))...)
		}
	}
	return allErrs
}

// ValidateCSIStorageCapacity is upstream's ValidateCSIStorageCapacity.
func ValidateCSIStorageCapacity(c *storagev1.CSIStorageCapacity) field.ErrorList {
	allErrs := metav1validation.ValidateLabelSelector(c.NodeTopology, metav1validation.LabelSelectorValidationOptions{}, field.NewPath("nodeTopology"))
	for _, msg := range apivalidation.NameIsDNSSubdomain(c.StorageClassName, false) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("storageClassName"), c.StorageClassName, msg))
	}
	if c.Capacity != nil {
		if c.Capacity.Sign() < 0 {
			allErrs = append(allErrs, field.Invalid(field.NewPath("capacity"), c.Capacity.String(), "must be greater than or equal to 0"))
		}
	}
	return allErrs
}

// ValidateCSIStorageCapacityUpdate is upstream's: nodeTopology and
// storageClassName are immutable.
func ValidateCSIStorageCapacityUpdate(c, old *storagev1.CSIStorageCapacity) field.ErrorList {
	allErrs := ValidateCSIStorageCapacity(c)
	if !apiequality.Semantic.DeepEqual(c.NodeTopology, old.NodeTopology) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("nodeTopology"), c.NodeTopology, "field is immutable"))
	}
	if c.StorageClassName != old.StorageClassName {
		allErrs = append(allErrs, field.Invalid(field.NewPath("storageClassName"), c.StorageClassName, "field is immutable"))
	}
	return allErrs
}

// ValidateVolumeAttachment is upstream's ValidateVolumeAttachment.
func ValidateVolumeAttachment(va *storagev1.VolumeAttachment) field.ErrorList {
	fldPath := field.NewPath("spec")
	allErrs := validateDriverName(va.Spec.Attacher, fldPath.Child("attacher"))
	src, sp := va.Spec.Source, fldPath.Child("source")
	switch {
	case src.InlineVolumeSpec == nil && src.PersistentVolumeName == nil:
		allErrs = append(allErrs, field.Required(sp, "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case src.InlineVolumeSpec != nil && src.PersistentVolumeName != nil:
		allErrs = append(allErrs, field.Forbidden(sp, "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case src.PersistentVolumeName != nil:
		if *src.PersistentVolumeName == "" {
			allErrs = append(allErrs, field.Required(sp.Child("persistentVolumeName"), "must specify non empty persistentVolumeName"))
		} else {
			for _, msg := range apivalidation.NameIsDNSSubdomain(*src.PersistentVolumeName, false) {
				allErrs = append(allErrs, field.Invalid(field.NewPath("spec.source.persistentVolumeName"), *src.PersistentVolumeName, msg))
			}
		}
	}
	for _, msg := range apivalidation.NameIsDNSSubdomain(va.Spec.NodeName, false) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("nodeName"), va.Spec.NodeName, msg))
	}
	return append(allErrs, ValidateVolumeAttachmentStatus(va, nil)...)
}

// ValidateVolumeAttachmentUpdate is upstream's: the spec is immutable.
func ValidateVolumeAttachmentUpdate(va, old *storagev1.VolumeAttachment) field.ErrorList {
	allErrs := ValidateVolumeAttachment(va)
	return append(allErrs, apivalidation.ValidateImmutableField(va.Spec, old.Spec, field.NewPath("spec"))...)
}

// ValidateVolumeAttachmentStatus is upstream's status validation:
// metadata size and error messages bounded.
func ValidateVolumeAttachmentStatus(va, _ *storagev1.VolumeAttachment) field.ErrorList {
	var allErrs field.ErrorList
	fldPath := field.NewPath("status")
	size := 0
	for k, v := range va.Status.AttachmentMetadata {
		size += len(k) + len(v)
	}
	if size > maxAttachedVolumeMetadataSize {
		allErrs = append(allErrs, field.TooLong(fldPath.Child("attachmentMetadata"), "", maxAttachedVolumeMetadataSize))
	}
	for name, e := range map[string]*storagev1.VolumeError{"attachError": va.Status.AttachError, "detachError": va.Status.DetachError} {
		if e == nil {
			continue
		}
		if len(e.Message) > maxVolumeErrorMessageSize {
			allErrs = append(allErrs, field.TooLong(fldPath.Child(name, "message"), "", maxVolumeErrorMessageSize))
		}
		if e.ErrorCode != nil && (*e.ErrorCode < 0 || int64(*e.ErrorCode) > math.MaxInt32) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child(name, "errorCode"), *e.ErrorCode, validation.InclusiveRangeError(0, math.MaxInt32)))
		}
	}
	return allErrs
}

// ValidateVolumeAttributesClass is upstream's.
func ValidateVolumeAttributesClass(c *storagev1.VolumeAttributesClass) field.ErrorList {
	allErrs := validateDriverName(c.DriverName, field.NewPath("driverName"))
	fldPath := field.NewPath("parameters")
	if len(c.Parameters) > maxProvisionerParameterLen {
		return append(allErrs, field.TooLong(fldPath, "", maxProvisionerParameterLen))
	}
	allErrs = append(allErrs, validateParameters(c.Parameters, fldPath)...)
	if len(c.Parameters) == 0 {
		allErrs = append(allErrs, field.Required(fldPath, "must contain at least one key/value pair"))
	}
	return allErrs
}

// ValidateVolumeAttributesClassUpdate is upstream's: driverName and
// parameters are immutable.
func ValidateVolumeAttributesClassUpdate(c, old *storagev1.VolumeAttributesClass) field.ErrorList {
	var allErrs field.ErrorList
	if c.DriverName != old.DriverName {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("driverName"), "updates to driverName are forbidden."))
	}
	if !apiequality.Semantic.DeepEqual(c.Parameters, old.Parameters) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
	}
	return append(allErrs, ValidateVolumeAttributesClass(c)...)
}
