package table

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// registerServiceNet adds upstream's printers of Services' networking:
// ServiceCIDRs and IPAddresses.
func registerServiceNet(c *Convertor) {
	c.register(endpointsPrinter, &corev1.Endpoints{}, &corev1.EndpointsList{})
	c.register(endpointSlicePrinter, &discoveryv1.EndpointSlice{}, &discoveryv1.EndpointSliceList{})
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

var endpointsPrinter = &printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Endpoints", Type: "string", Description: corev1.Endpoints{}.SwaggerDoc()["subsets"]},
		ageColumn,
	},
	row: func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		ep := obj.(*corev1.Endpoints)
		return []any{ep.Name, formatEndpoints(ep), age(ep.CreationTimestamp, now)}, nil
	},
}

// formatEndpoints is upstream's: the first three ready address:port
// pairs (addresses alone without ports), then "+ N more...".
func formatEndpoints(ep *corev1.Endpoints) string {
	if len(ep.Subsets) == 0 {
		return "<none>"
	}
	const max = 3
	var list []string
	count := 0
	for _, ss := range ep.Subsets {
		if len(ss.Ports) == 0 {
			count += len(ss.Addresses)
			for _, a := range ss.Addresses {
				if len(list) < max {
					list = append(list, a.IP)
				}
			}
			continue
		}
		for _, p := range ss.Ports {
			count += len(ss.Addresses)
			for _, a := range ss.Addresses {
				if len(list) < max {
					list = append(list, net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
				}
			}
		}
	}
	ret := strings.Join(list, ",")
	if count > max {
		return fmt.Sprintf("%s + %d more...", ret, count-max)
	}
	return ret
}

var endpointSlicePrinter = &printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "AddressType", Type: "string", Description: discoveryv1.EndpointSlice{}.SwaggerDoc()["addressType"]},
		{Name: "Ports", Type: "string", Description: discoveryv1.EndpointSlice{}.SwaggerDoc()["ports"]},
		{Name: "Endpoints", Type: "string", Description: discoveryv1.EndpointSlice{}.SwaggerDoc()["endpoints"]},
		ageColumn,
	},
	row: func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		s := obj.(*discoveryv1.EndpointSlice)
		var ports, addrs []string
		for _, p := range s.Ports {
			switch {
			case p.Port != nil:
				ports = append(ports, strconv.Itoa(int(*p.Port)))
			case p.Name != nil:
				ports = append(ports, *p.Name)
			default:
				ports = append(ports, "*")
			}
		}
		for _, ep := range s.Endpoints {
			addrs = append(addrs, ep.Addresses...)
		}
		return []any{s.Name, string(s.AddressType), withMore(ports), withMore(addrs), age(s.CreationTimestamp, now)}, nil
	},
}

// withMore is upstream's listWithMoreString: three, then "+ N more...",
// "<unset>" for none.
func withMore(list []string) string {
	const max = 3
	switch {
	case len(list) == 0:
		return "<unset>"
	case len(list) > max:
		return fmt.Sprintf("%s + %d more...", strings.Join(list[:max], ","), len(list)-max)
	}
	return strings.Join(list, ",")
}
