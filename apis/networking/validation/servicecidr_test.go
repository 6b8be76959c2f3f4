package validation

import (
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestServiceCIDRsAreValidatedAsUpstream(t *testing.T) {
	cidr := func(cidrs ...string) *networkingv1.ServiceCIDR {
		return &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "c", ResourceVersion: "1"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: cidrs}}
	}
	tests := []struct {
		name     string
		old, new *networkingv1.ServiceCIDR
		want     string // a part of the errors; "" none
	}{
		{name: "one CIDR", new: cidr("10.43.0.0/16")},
		{name: "dual-stack", new: cidr("10.43.0.0/16", "fd00::/108")},
		{name: "none", new: cidr(), want: "spec.cidrs: Required value: at least one CIDR required"},
		{name: "three", new: cidr("10.0.0.0/8", "fd00::/108", "11.0.0.0/8"), want: "may only hold up to 2 values"},
		{name: "two of one family", new: cidr("10.0.0.0/8", "11.0.0.0/8"), want: "may specify no more than one IP for each IP family"},
		{name: "not a CIDR", new: cidr("10.0.0.1"), want: "spec.cidrs[0]"},
		{name: "a CIDR changed", old: cidr("10.43.0.0/16"), new: cidr("10.44.0.0/16"), want: `spec.cidrs[0]: Invalid value: "10.44.0.0/16": field is immutable`},
		{name: "a second family added", old: cidr("10.43.0.0/16"), new: cidr("10.43.0.0/16", "fd00::/108")},
		{name: "a family removed", old: cidr("10.43.0.0/16", "fd00::/108"), new: cidr("10.43.0.0/16"), want: "field is immutable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateServiceCIDR(tt.new)
			if tt.old != nil {
				errs = ValidateServiceCIDRUpdate(tt.new, tt.old)
			}
			got := errs.ToAggregate()
			switch {
			case tt.want == "" && got != nil:
				t.Errorf("errors %v, want none", got)
			case tt.want != "" && (got == nil || !strings.Contains(got.Error(), tt.want)):
				t.Errorf("errors %v, want %q", got, tt.want)
			}
		})
	}
}

func TestIPAddressesAreValidatedAsUpstream(t *testing.T) {
	ref := &networkingv1.ParentReference{Resource: "services", Namespace: "ns", Name: "web"}
	tests := []struct {
		name string
		ip   networkingv1.IPAddress
		want string
	}{
		{name: "a service's", ip: networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "10.43.0.1"}, Spec: networkingv1.IPAddressSpec{ParentRef: ref}}},
		{name: "not canonical", ip: networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "fd00::0001"}, Spec: networkingv1.IPAddressSpec{ParentRef: ref}}, want: "metadata.name"},
		{name: "no parent", ip: networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "10.43.0.1"}}, want: "spec.parentRef: Required value"},
		{name: "a parent without name", ip: networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "10.43.0.1"}, Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services"}}}, want: "spec.parentRef.name: Required value"},
		{name: "a parent named ..", ip: networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "10.43.0.1"}, Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Name: ".."}}}, want: "may not be '..'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ValidateIPAddress(&tt.ip).ToAggregate()
			switch {
			case tt.want == "" && got != nil:
				t.Errorf("errors %v, want none", got)
			case tt.want != "" && (got == nil || !strings.Contains(got.Error(), tt.want)):
				t.Errorf("errors %v, want %q", got, tt.want)
			}
		})
	}
	old := &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "10.43.0.1", ResourceVersion: "1"}, Spec: networkingv1.IPAddressSpec{ParentRef: ref}}
	moved := old.DeepCopy()
	moved.Spec.ParentRef.Name = "other"
	if errs := ValidateIPAddressUpdate(moved, old); len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "spec.parentRef: Invalid value") {
		t.Errorf("a moved parentRef: %v", errs)
	}
}
