package table

import (
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// registerServiceNet adds upstream's printers of Services' networking:
// ServiceCIDRs and IPAddresses.
func registerServiceNet(c *Convertor) {
	c.register(serviceCIDRPrinter, &networkingv1.ServiceCIDR{}, &networkingv1.ServiceCIDRList{})
	c.register(ipAddressPrinter, &networkingv1.IPAddress{}, &networkingv1.IPAddressList{})
}

var serviceCIDRPrinter = &printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "CIDRs", Type: "string", Description: networkingv1.ServiceCIDRSpec{}.SwaggerDoc()["cidrs"]},
		ageColumn,
	},
	row: func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		c := obj.(*networkingv1.ServiceCIDR)
		return []any{c.Name, strings.Join(c.Spec.CIDRs, ","), age(c.CreationTimestamp, now)}, nil
	},
}

// ipAddressPrinter is upstream's: the parent as resource[.group]/[namespace/]name.
var ipAddressPrinter = &printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "ParentRef", Type: "string", Description: networkingv1.IPAddressSpec{}.SwaggerDoc()["parentRef"]},
	},
	row: func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		ip := obj.(*networkingv1.IPAddress)
		parent := "<none>"
		if ref := ip.Spec.ParentRef; ref != nil {
			parent = strings.ToLower(schema.GroupResource{Group: ref.Group, Resource: ref.Resource}.String())
			if ref.Namespace != "" {
				parent += "/" + ref.Namespace
			}
			parent += "/" + ref.Name
		}
		// Upstream's row has the age too, beyond its columns.
		return []any{ip.Name, parent, age(ip.CreationTimestamp, now)}, nil
	},
}
