package validation

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	corevalidation "github.com/kite-project/kite/apis/core/validation"
)

// ValidateStatefulSetName is upstream's: a DNS-1123 label, since the
// name is the prefix of its pods' host names.
var ValidateStatefulSetName = apivalidation.NameIsDNSLabel

// ValidateStatefulSet checks a StatefulSet on create.
func ValidateStatefulSet(s *appsv1.StatefulSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&s.ObjectMeta, true, ValidateStatefulSetName, field.NewPath("metadata"))
	return append(allErrs, validateStatefulSetSpec(&s.Spec, field.NewPath("spec"), statefulSetOptions{})...)
}

// ValidateStatefulSetUpdate is upstream's: the spec valid (an invalid
// service name or claim template already stored is tolerated, and an
// invalid pod template too when the old object was invalid), and the
// selector, volumeClaimTemplates, serviceName and podManagementPolicy
// immutable.
func ValidateStatefulSetUpdate(s, old *appsv1.StatefulSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&s.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	opts := statefulSetOptions{allowInvalidServiceName: true, skipVolumeClaimTemplates: true}
	if len(validateStatefulSetSpec(&old.Spec, nil, opts)) > 0 {
		opts.skipPodTemplateSpec = true
	}
	p := field.NewPath("spec")
	allErrs = append(allErrs, validateStatefulSetSpec(&s.Spec, p, opts)...)
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(s.Spec.Selector, old.Spec.Selector, p.Child("selector"))...)
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(s.Spec.VolumeClaimTemplates, old.Spec.VolumeClaimTemplates, p.Child("volumeClaimTemplates"))...)
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(s.Spec.ServiceName, old.Spec.ServiceName, p.Child("serviceName"))...)
	return append(allErrs, apivalidation.ValidateImmutableField(s.Spec.PodManagementPolicy, old.Spec.PodManagementPolicy, p.Child("podManagementPolicy"))...)
}

// ValidateStatefulSetStatusUpdate checks a write of a StatefulSet's status.
func ValidateStatefulSetStatusUpdate(s, old *appsv1.StatefulSet) field.ErrorList {
	p := field.NewPath("status")
	st := &s.Status
	var allErrs field.ErrorList
	allErrs = append(allErrs, nonNegative(st.Replicas, p.Child("replicas"))...)
	allErrs = append(allErrs, nonNegative(st.ReadyReplicas, p.Child("readyReplicas"))...)
	allErrs = append(allErrs, nonNegative(st.CurrentReplicas, p.Child("currentReplicas"))...)
	allErrs = append(allErrs, nonNegative(st.UpdatedReplicas, p.Child("updatedReplicas"))...)
	allErrs = append(allErrs, nonNegative(st.AvailableReplicas, p.Child("availableReplicas"))...)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(st.ObservedGeneration, p.Child("observedGeneration"))...)
	if st.CollisionCount != nil {
		allErrs = append(allErrs, nonNegative(*st.CollisionCount, p.Child("collisionCount"))...)
	}
	const msg = "cannot be greater than status.replicas"
	if st.ReadyReplicas > st.Replicas {
		allErrs = append(allErrs, field.Invalid(p.Child("readyReplicas"), st.ReadyReplicas, msg))
	}
	if st.CurrentReplicas > st.Replicas {
		allErrs = append(allErrs, field.Invalid(p.Child("currentReplicas"), st.CurrentReplicas, msg))
	}
	if st.UpdatedReplicas > st.Replicas {
		allErrs = append(allErrs, field.Invalid(p.Child("updatedReplicas"), st.UpdatedReplicas, msg))
	}
	if st.AvailableReplicas > st.Replicas {
		allErrs = append(allErrs, field.Invalid(p.Child("availableReplicas"), st.AvailableReplicas, msg))
	}
	if st.AvailableReplicas > st.ReadyReplicas {
		allErrs = append(allErrs, field.Invalid(p.Child("availableReplicas"), st.AvailableReplicas, "cannot be greater than status.readyReplicas"))
	}
	allErrs = append(allErrs, apivalidation.ValidateObjectMetaUpdate(&s.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
	if decremented(st.CollisionCount, old.Status.CollisionCount) {
		allErrs = append(allErrs, field.Invalid(p.Child("collisionCount"), valueOf(st.CollisionCount), "cannot be decremented"))
	}
	return allErrs
}

// statefulSetOptions are upstream's StatefulSetValidationOptions (the
// Recreate strategy is behind an alpha gate, off, so never allowed).
type statefulSetOptions struct {
	allowInvalidServiceName  bool
	skipPodTemplateSpec      bool
	skipVolumeClaimTemplates bool
}

func validateStatefulSetSpec(spec *appsv1.StatefulSetSpec, fldPath *field.Path, opts statefulSetOptions) field.ErrorList {
	var allErrs field.ErrorList
	switch spec.PodManagementPolicy {
	case "":
		allErrs = append(allErrs, field.Required(fldPath.Child("podManagementPolicy"), ""))
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	default:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("podManagementPolicy"), spec.PodManagementPolicy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement)))
	}
	us := &spec.UpdateStrategy
	switch us.Type {
	case "":
		allErrs = append(allErrs, field.Required(fldPath.Child("updateStrategy"), ""))
	case appsv1.OnDeleteStatefulSetStrategyType:
		if us.RollingUpdate != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("updateStrategy", "rollingUpdate"), us.RollingUpdate,
				fmt.Sprintf("only allowed for updateStrategy '%s'", appsv1.RollingUpdateStatefulSetStrategyType)))
		}
	case appsv1.RollingUpdateStatefulSetStrategyType:
		if us.RollingUpdate != nil {
			allErrs = append(allErrs, validateRollingUpdateStatefulSet(us.RollingUpdate, fldPath.Child("updateStrategy", "rollingUpdate"))...)
		}
	default:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("updateStrategy"), *us,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.RollingUpdateStatefulSetStrategyType, appsv1.OnDeleteStatefulSetStrategyType)))
	}
	if p := spec.PersistentVolumeClaimRetentionPolicy; p != nil {
		pp := fldPath.Child("persistentVolumeClaimRetentionPolicy")
		allErrs = append(allErrs, validateRetentionPolicyType(p.WhenDeleted, pp.Child("whenDeleted"))...)
		allErrs = append(allErrs, validateRetentionPolicyType(p.WhenScaled, pp.Child("whenScaled"))...)
	}
	if !opts.skipVolumeClaimTemplates {
		for i := range spec.VolumeClaimTemplates {
			allErrs = append(allErrs, corevalidation.ValidatePersistentVolumeClaimSpec(&spec.VolumeClaimTemplates[i].Spec, fldPath.Child("volumeClaimTemplates").Index(i).Child("spec"))...)
		}
	}
	if spec.Replicas != nil {
		allErrs = append(allErrs, nonNegative(*spec.Replicas, fldPath.Child("replicas"))...)
	}
	allErrs = append(allErrs, nonNegative(spec.MinReadySeconds, fldPath.Child("minReadySeconds"))...)
	if spec.Ordinals != nil {
		allErrs = append(allErrs, nonNegative(spec.Ordinals.Start, fldPath.Child("ordinals.start"))...)
	}
	if !opts.allowInvalidServiceName && spec.ServiceName != "" {
		allErrs = append(allErrs, dns1123Label(spec.ServiceName, fldPath.Child("serviceName"))...)
	}
	if spec.Selector == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("selector"), ""))
	} else {
		allErrs = append(allErrs, metavalidation.ValidateLabelSelector(spec.Selector, metavalidation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))...)
		if len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("selector"), spec.Selector, "empty selector is invalid for statefulset"))
		}
	}
	tPath := fldPath.Child("template")
	if selector, err := metav1.LabelSelectorAsSelector(spec.Selector); err != nil {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("selector"), spec.Selector, ""))
	} else {
		if !selector.Empty() && !selector.Matches(labels.Set(spec.Template.Labels)) {
			allErrs = append(allErrs, field.Invalid(tPath.Child("metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
		}
		if !opts.skipPodTemplateSpec {
			allErrs = append(allErrs, corevalidation.ValidatePodTemplateSpec(statefulSetTemplateToValidate(spec), tPath)...)
		}
	}
	if spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		allErrs = append(allErrs, field.NotSupported(tPath.Child("spec", "restartPolicy"), spec.Template.Spec.RestartPolicy, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if spec.Template.Spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, field.Forbidden(tPath.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in StatefulSet is not Supported"))
	}
	return allErrs
}

// statefulSetTemplateToValidate is the template as the controller will
// make its pods: hostname and subdomain are set by it, and each claim
// template is a persistentVolumeClaim volume of the same name (so mounts
// of it are valid).
func statefulSetTemplateToValidate(spec *appsv1.StatefulSetSpec) *corev1.PodTemplateSpec {
	t := &spec.Template
	if t.Spec.Subdomain == "" && t.Spec.Hostname == "" && len(spec.VolumeClaimTemplates) == 0 {
		return t
	}
	t = t.DeepCopy()
	t.Spec.Subdomain, t.Spec.Hostname = "", ""
	if len(spec.VolumeClaimTemplates) == 0 {
		return t
	}
	claims := map[string]bool{}
	var vols []corev1.Volume
	for _, c := range spec.VolumeClaimTemplates {
		if claims[c.Name] {
			continue
		}
		claims[c.Name] = true
		vols = append(vols, corev1.Volume{Name: c.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name}}})
	}
	for _, v := range t.Spec.Volumes {
		if !claims[v.Name] {
			vols = append(vols, v)
		}
	}
	t.Spec.Volumes = vols
	return t
}

func validateRetentionPolicyType(t appsv1.PersistentVolumeClaimRetentionPolicyType, fldPath *field.Path) field.ErrorList {
	switch t {
	case appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType:
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath, t, []appsv1.PersistentVolumeClaimRetentionPolicyType{
		appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType})}
}

func validateRollingUpdateStatefulSet(ru *appsv1.RollingUpdateStatefulSetStrategy, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if ru.Partition != nil {
		allErrs = append(allErrs, nonNegative(*ru.Partition, fldPath.Child("partition"))...)
	}
	if ru.MaxUnavailable != nil {
		p := fldPath.Child("maxUnavailable")
		allErrs = append(allErrs, validatePositiveIntOrPercent(*ru.MaxUnavailable, p)...)
		if intOrPercentValue(*ru.MaxUnavailable) == 0 {
			allErrs = append(allErrs, field.Invalid(p, *ru.MaxUnavailable, "cannot be 0"))
		}
		allErrs = append(allErrs, notMoreThan100Percent(*ru.MaxUnavailable, p)...)
	}
	return allErrs
}

// notMoreThan100Percent is upstream's IsNotMoreThan100Percent.
func notMoreThan100Percent(v intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	if n, ok := percentValue(v); ok && n > 100 {
		return field.ErrorList{field.Invalid(fldPath, v, "must not be greater than 100%")}
	}
	return nil
}

// dns1123Label is upstream's ValidateDNS1123Label.
func dns1123Label(value string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(value) {
		allErrs = append(allErrs, field.Invalid(fldPath, value, msg))
	}
	return allErrs
}
