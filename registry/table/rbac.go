package table

import (
	"fmt"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// registerRBAC adds upstream's printers of the RBAC bindings. Roles and
// ClusterRoles have none upstream: they get the default Name, Created At.
func registerRBAC(c *Convertor) {
	c.register(bindingPrinter("roleBinding", rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]), &rbacv1.RoleBinding{}, &rbacv1.RoleBindingList{})
	c.register(bindingPrinter("clusterRoleBinding", rbacv1.ClusterRoleBinding{}.SwaggerDoc()["roleRef"]), &rbacv1.ClusterRoleBinding{}, &rbacv1.ClusterRoleBindingList{})
}

// bindingPrinter is upstream's printRoleBinding and
// printClusterRoleBinding: Name, Role (Kind/name), Age, and wide the
// subjects by kind.
func bindingPrinter(what, roleRefDoc string) *printer {
	return &printer{
		columns: []metav1.TableColumnDefinition{
			nameColumn,
			{Name: "Role", Type: "string", Description: roleRefDoc},
			ageColumn,
			{Name: "Users", Type: "string", Priority: 1, Description: "Users in the " + what},
			{Name: "Groups", Type: "string", Priority: 1, Description: "Groups in the " + what},
			{Name: "ServiceAccounts", Type: "string", Priority: 1, Description: "ServiceAccounts in the " + what},
		},
		row: func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
			var m metav1.ObjectMeta
			var ref rbacv1.RoleRef
			var subjects []rbacv1.Subject
			switch b := obj.(type) {
			case *rbacv1.RoleBinding:
				m, ref, subjects = b.ObjectMeta, b.RoleRef, b.Subjects
			case *rbacv1.ClusterRoleBinding:
				m, ref, subjects = b.ObjectMeta, b.RoleRef, b.Subjects
			}
			users, groups, sas := []string{}, []string{}, []string{}
			for _, s := range subjects {
				switch s.Kind {
				case rbacv1.ServiceAccountKind:
					sas = append(sas, s.Namespace+"/"+s.Name)
				case rbacv1.UserKind:
					users = append(users, s.Name)
				case rbacv1.GroupKind:
					groups = append(groups, s.Name)
				}
			}
			return []any{m.Name, fmt.Sprintf("%s/%s", ref.Kind, ref.Name), age(m.CreationTimestamp, now),
				strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}, nil
		},
	}
}
