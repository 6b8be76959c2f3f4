package builtin

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	coordinationvalidation "github.com/kite-project/kite/apis/coordination/validation"
	"github.com/kite-project/kite/apis/core/defaults"
	"github.com/kite-project/kite/apis/core/validation"
	"github.com/kite-project/kite/registry"
)

// ConfigMaps returns the strategy of core/v1 configmaps.
func ConfigMaps() *registry.Strategy {
	return &registry.Strategy{
		Kind:              v1.SchemeGroupVersion.WithKind("ConfigMap"),
		Resource:          "configmaps",
		SingularName:      "configmap",
		ShortNames:        []string{"cm"},
		Namespaced:        true,
		New:               func() runtime.Object { return &v1.ConfigMap{} },
		NewList:           func() runtime.Object { return &v1.ConfigMapList{} },
		Default:           func(obj runtime.Object) { defaults.ConfigMap(obj.(*v1.ConfigMap)) },
		ValidatesMetadata: true,
		Validate:          func(obj runtime.Object) field.ErrorList { return validation.ValidateConfigMap(obj.(*v1.ConfigMap)) },
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateConfigMapUpdate(obj.(*v1.ConfigMap), old.(*v1.ConfigMap))
		},
		AllowUnconditionalUpdate: true,
	}
}

// Secrets returns the strategy of core/v1 secrets.
func Secrets() *registry.Strategy {
	return &registry.Strategy{
		Kind:              v1.SchemeGroupVersion.WithKind("Secret"),
		Resource:          "secrets",
		SingularName:      "secret",
		Namespaced:        true,
		New:               func() runtime.Object { return &v1.Secret{} },
		NewList:           func() runtime.Object { return &v1.SecretList{} },
		Default:           func(obj runtime.Object) { defaults.Secret(obj.(*v1.Secret)) },
		ValidatesMetadata: true,
		Validate:          func(obj runtime.Object) field.ErrorList { return validation.ValidateSecret(obj.(*v1.Secret)) },
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateSecretUpdate(obj.(*v1.Secret), old.(*v1.Secret))
		},
		SelectableFields: func(obj runtime.Object) fields.Set {
			return fields.Set{"type": string(obj.(*v1.Secret).Type)}
		},
		FieldLabels:              []string{"type"},
		AllowUnconditionalUpdate: true,
	}
}

// ServiceAccounts returns the strategy of core/v1 serviceaccounts.
func ServiceAccounts() *registry.Strategy {
	return &registry.Strategy{
		Kind:              v1.SchemeGroupVersion.WithKind("ServiceAccount"),
		Resource:          "serviceaccounts",
		SingularName:      "serviceaccount",
		ShortNames:        []string{"sa"},
		Namespaced:        true,
		New:               func() runtime.Object { return &v1.ServiceAccount{} },
		NewList:           func() runtime.Object { return &v1.ServiceAccountList{} },
		ValidatesMetadata: true,
		Validate: func(obj runtime.Object) field.ErrorList {
			return validation.ValidateServiceAccount(obj.(*v1.ServiceAccount))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateServiceAccountUpdate(obj.(*v1.ServiceAccount), old.(*v1.ServiceAccount))
		},
		AllowUnconditionalUpdate: true,
	}
}

// Leases returns the strategy of coordination.k8s.io/v1 leases (node
// heartbeats, leader election).
func Leases() *registry.Strategy {
	return &registry.Strategy{
		Kind:              coordinationv1.SchemeGroupVersion.WithKind("Lease"),
		Resource:          "leases",
		SingularName:      "lease",
		Namespaced:        true,
		New:               func() runtime.Object { return &coordinationv1.Lease{} },
		NewList:           func() runtime.Object { return &coordinationv1.LeaseList{} },
		ValidatesMetadata: true,
		Validate: func(obj runtime.Object) field.ErrorList {
			return coordinationvalidation.ValidateLease(obj.(*coordinationv1.Lease))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return coordinationvalidation.ValidateLeaseUpdate(obj.(*coordinationv1.Lease), old.(*coordinationv1.Lease))
		},
		AllowUnconditionalUpdate: true,
	}
}
