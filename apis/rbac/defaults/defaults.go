// Package defaults fills rbac.authorization.k8s.io/v1 defaults as
// kube-apiserver does, following kubernetes/kubernetes pkg/apis/rbac/v1
// (defaults.go): a binding's roleRef.apiGroup, and each subject's apiGroup
// by its kind.
package defaults

import rbacv1 "k8s.io/api/rbac/v1"

// ClusterRoleBinding defaults roleRef.apiGroup and the subjects.
func ClusterRoleBinding(obj *rbacv1.ClusterRoleBinding) {
	if obj.RoleRef.APIGroup == "" {
		obj.RoleRef.APIGroup = rbacv1.GroupName
	}
	Subjects(obj.Subjects)
}

// RoleBinding defaults roleRef.apiGroup and the subjects.
func RoleBinding(obj *rbacv1.RoleBinding) {
	if obj.RoleRef.APIGroup == "" {
		obj.RoleRef.APIGroup = rbacv1.GroupName
	}
	Subjects(obj.Subjects)
}

// Subjects gives users and groups the RBAC API group when they have none
// (ServiceAccounts keep the core group, "").
func Subjects(subjects []rbacv1.Subject) {
	for i := range subjects {
		s := &subjects[i]
		if s.APIGroup != "" {
			continue
		}
		switch s.Kind {
		case rbacv1.UserKind, rbacv1.GroupKind:
			s.APIGroup = rbacv1.GroupName
		}
	}
}
