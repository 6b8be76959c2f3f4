// Package bootstrappolicy is kube-apiserver 1.37's default RBAC policy:
// the ClusterRoles, ClusterRoleBindings, Roles and RoleBindings it
// reconciles at start. The data are upstream's own fixtures of that
// policy under the default feature gates
// (kubernetes/kubernetes plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata,
// v1.37.2, Apache-2.0), which upstream's tests hold its Go definitions
// to; copying them keeps Kite's policy exactly upstream's without
// importing k8s.io/kubernetes.
package bootstrappolicy

import (
	"embed"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

//go:embed data/*.yaml
var data embed.FS

// Policy is the whole default policy.
type Policy struct {
	ClusterRoles        []rbacv1.ClusterRole
	ClusterRoleBindings []rbacv1.ClusterRoleBinding
	// Roles and RoleBindings live in kube-system and kube-public.
	Roles        []rbacv1.Role
	RoleBindings []rbacv1.RoleBinding
}

// Load decodes the policy. Each call returns new objects.
func Load() (*Policy, error) {
	p := &Policy{}
	for _, f := range []string{"cluster-roles.yaml", "controller-roles.yaml"} {
		if err := decode(f, &p.ClusterRoles); err != nil {
			return nil, err
		}
	}
	for _, f := range []string{"cluster-role-bindings.yaml", "controller-role-bindings.yaml"} {
		if err := decode(f, &p.ClusterRoleBindings); err != nil {
			return nil, err
		}
	}
	if err := decode("namespace-roles.yaml", &p.Roles); err != nil {
		return nil, err
	}
	if err := decode("namespace-role-bindings.yaml", &p.RoleBindings); err != nil {
		return nil, err
	}
	return p, nil
}

// decode appends the items of a v1 List file to into.
func decode[T any](file string, into *[]T) error {
	b, err := data.ReadFile("data/" + file)
	if err != nil {
		return fmt.Errorf("bootstrap policy %s: %w", file, err)
	}
	var list struct {
		metav1.TypeMeta `json:",inline"`
		Items           []T             `json:"items"`
		ListMeta        metav1.ListMeta `json:"metadata"`
	}
	if err := yaml.UnmarshalStrict(b, &list, yaml.DisallowUnknownFields); err != nil {
		return fmt.Errorf("bootstrap policy %s: %w", file, err)
	}
	*into = append(*into, list.Items...)
	return nil
}

// NodeName is the ClusterRole whose rules the Node authorizer applies to
// nodes beyond its own decisions (upstream's NodeRules()).
const NodeName = "system:node"

// ClusterRole returns the policy's ClusterRole name.
func (p *Policy) ClusterRole(name string) (*rbacv1.ClusterRole, bool) {
	i := slices.IndexFunc(p.ClusterRoles, func(r rbacv1.ClusterRole) bool { return r.Name == name })
	if i < 0 {
		return nil, false
	}
	return &p.ClusterRoles[i], true
}
