package builtin

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kite-project/kite/registry"
)

// maxDataSize is upstream's limit on the data of a configmap or secret.
const maxDataSize = 1 << 20

// ConfigMaps returns the strategy of core/v1 configmaps.
func ConfigMaps() *registry.Strategy {
	return &registry.Strategy{
		Kind:                     v1.SchemeGroupVersion.WithKind("ConfigMap"),
		Resource:                 "configmaps",
		SingularName:             "configmap",
		ShortNames:               []string{"cm"},
		Namespaced:               true,
		New:                      func() runtime.Object { return &v1.ConfigMap{} },
		NewList:                  func() runtime.Object { return &v1.ConfigMapList{} },
		Validate:                 func(obj runtime.Object) field.ErrorList { return validateConfigMap(obj.(*v1.ConfigMap)) },
		ValidateUpdate:           validateConfigMapUpdate,
		AllowUnconditionalUpdate: true,
	}
}

func validateConfigMap(cm *v1.ConfigMap) field.ErrorList {
	errs := field.ErrorList{}
	size := 0
	for key, value := range cm.Data {
		errs = append(errs, validateDataKey(key, field.NewPath("data").Key(key))...)
		if _, dup := cm.BinaryData[key]; dup {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(key), key, "duplicate of key present in binaryData"))
		}
		size += len(value)
	}
	for key, value := range cm.BinaryData {
		errs = append(errs, validateDataKey(key, field.NewPath("binaryData").Key(key))...)
		size += len(value)
	}
	if size > maxDataSize {
		errs = append(errs, field.TooLong(field.NewPath(""), "", maxDataSize))
	}
	return errs
}

func validateConfigMapUpdate(obj, old runtime.Object) field.ErrorList {
	cm, oldCM := obj.(*v1.ConfigMap), old.(*v1.ConfigMap)
	errs := validateConfigMap(cm)
	if oldCM.Immutable != nil && *oldCM.Immutable {
		if cm.Immutable == nil || !*cm.Immutable {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
		}
		if !equalStringMaps(cm.Data, oldCM.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"))
		}
	}
	return errs
}

func validateDataKey(key string, path *field.Path) field.ErrorList {
	errs := field.ErrorList{}
	for _, msg := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(path, key, msg))
	}
	return errs
}

func equalStringMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || v != w {
			return false
		}
	}
	return true
}

// Secrets returns the strategy of core/v1 secrets.
func Secrets() *registry.Strategy {
	return &registry.Strategy{
		Kind:         v1.SchemeGroupVersion.WithKind("Secret"),
		Resource:     "secrets",
		SingularName: "secret",
		Namespaced:   true,
		New:          func() runtime.Object { return &v1.Secret{} },
		NewList:      func() runtime.Object { return &v1.SecretList{} },
		Default: func(obj runtime.Object) {
			s := obj.(*v1.Secret)
			if s.Type == "" {
				s.Type = v1.SecretTypeOpaque
			}
			// stringData is write-only: it is merged into data.
			for k, v := range s.StringData {
				if s.Data == nil {
					s.Data = map[string][]byte{}
				}
				s.Data[k] = []byte(v)
			}
			s.StringData = nil
		},
		Validate: func(obj runtime.Object) field.ErrorList { return validateSecret(obj.(*v1.Secret)) },
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			s, oldS := obj.(*v1.Secret), old.(*v1.Secret)
			errs := validateSecret(s)
			if s.Type != oldS.Type {
				errs = append(errs, field.Invalid(field.NewPath("type"), s.Type, "field is immutable"))
			}
			return errs
		},
		SelectableFields: func(obj runtime.Object) fields.Set {
			return fields.Set{"type": string(obj.(*v1.Secret).Type)}
		},
		FieldLabels:              []string{"type"},
		AllowUnconditionalUpdate: true,
	}
}

func validateSecret(s *v1.Secret) field.ErrorList {
	errs := field.ErrorList{}
	size := 0
	for key, value := range s.Data {
		errs = append(errs, validateDataKey(key, field.NewPath("data").Key(key))...)
		size += len(value)
	}
	if size > maxDataSize {
		errs = append(errs, field.TooLong(field.NewPath("data"), "", maxDataSize))
	}
	return errs
}

// ServiceAccounts returns the strategy of core/v1 serviceaccounts.
func ServiceAccounts() *registry.Strategy {
	return &registry.Strategy{
		Kind:                     v1.SchemeGroupVersion.WithKind("ServiceAccount"),
		Resource:                 "serviceaccounts",
		SingularName:             "serviceaccount",
		ShortNames:               []string{"sa"},
		Namespaced:               true,
		New:                      func() runtime.Object { return &v1.ServiceAccount{} },
		NewList:                  func() runtime.Object { return &v1.ServiceAccountList{} },
		ValidateName:             apivalidation.ValidateServiceAccountName,
		AllowUnconditionalUpdate: true,
	}
}

// Services returns the strategy of core/v1 services. Kite stores service
// objects only: no cluster IP or node port is allocated and nothing
// routes traffic.
func Services() *registry.Strategy {
	return &registry.Strategy{
		Kind:          v1.SchemeGroupVersion.WithKind("Service"),
		Resource:      "services",
		SingularName:  "service",
		ShortNames:    []string{"svc"},
		Categories:    []string{"all"},
		Namespaced:    true,
		StoragePrefix: "services/specs",
		New:           func() runtime.Object { return &v1.Service{} },
		NewList:       func() runtime.Object { return &v1.ServiceList{} },
		ValidateName:  apivalidation.NameIsDNS1035Label,
		Default:       func(obj runtime.Object) { defaultService(obj.(*v1.Service)) },
		PrepareForCreate: func(obj runtime.Object) {
			obj.(*v1.Service).Status = v1.ServiceStatus{}
		},
		PrepareForUpdate: func(obj, old runtime.Object) {
			obj.(*v1.Service).Status = old.(*v1.Service).Status
		},
		Validate:                 func(obj runtime.Object) field.ErrorList { return validateService(obj.(*v1.Service)) },
		ValidateUpdate:           func(obj, old runtime.Object) field.ErrorList { return validateService(obj.(*v1.Service)) },
		AllowUnconditionalUpdate: true,
		Subresources: map[string]*registry.Subresource{
			"status": {PrepareForUpdate: func(obj, old runtime.Object) {
				obj.(*v1.Service).Spec = old.(*v1.Service).Spec
			}},
		},
	}
}

func defaultService(svc *v1.Service) {
	if svc.Spec.Type == "" {
		svc.Spec.Type = v1.ServiceTypeClusterIP
	}
	if svc.Spec.SessionAffinity == "" {
		svc.Spec.SessionAffinity = v1.ServiceAffinityNone
	}
	if svc.Spec.InternalTrafficPolicy == nil && svc.Spec.Type != v1.ServiceTypeExternalName {
		policy := v1.ServiceInternalTrafficPolicyCluster
		svc.Spec.InternalTrafficPolicy = &policy
	}
	for i := range svc.Spec.Ports {
		p := &svc.Spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = v1.ProtocolTCP
		}
		if p.TargetPort == (intstr.IntOrString{}) {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
}

func validateService(svc *v1.Service) field.ErrorList {
	errs := field.ErrorList{}
	ports := field.NewPath("spec", "ports")
	if len(svc.Spec.Ports) == 0 && svc.Spec.Type != v1.ServiceTypeExternalName && svc.Spec.ClusterIP != v1.ClusterIPNone {
		errs = append(errs, field.Required(ports, ""))
	}
	names := map[string]bool{}
	for i, p := range svc.Spec.Ports {
		for _, msg := range validation.IsValidPortNum(int(p.Port)) {
			errs = append(errs, field.Invalid(ports.Index(i).Child("port"), p.Port, msg))
		}
		if len(svc.Spec.Ports) > 1 && p.Name == "" {
			errs = append(errs, field.Required(ports.Index(i).Child("name"), ""))
		}
		if p.Name != "" && names[p.Name] {
			errs = append(errs, field.Duplicate(ports.Index(i).Child("name"), p.Name))
		}
		names[p.Name] = true
	}
	return errs
}

// Leases returns the strategy of coordination.k8s.io/v1 leases (node
// heartbeats, leader election).
func Leases() *registry.Strategy {
	return &registry.Strategy{
		Kind:         coordinationv1.SchemeGroupVersion.WithKind("Lease"),
		Resource:     "leases",
		SingularName: "lease",
		Namespaced:   true,
		New:          func() runtime.Object { return &coordinationv1.Lease{} },
		NewList:      func() runtime.Object { return &coordinationv1.LeaseList{} },
		Validate: func(obj runtime.Object) field.ErrorList {
			lease := obj.(*coordinationv1.Lease)
			if d := lease.Spec.LeaseDurationSeconds; d != nil && *d <= 0 {
				return field.ErrorList{field.Invalid(field.NewPath("spec", "leaseDurationSeconds"), *d, "must be greater than 0")}
			}
			return nil
		},
		AllowUnconditionalUpdate: true,
	}
}
