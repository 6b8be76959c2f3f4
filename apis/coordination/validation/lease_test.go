package validation

import (
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func validLease() *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: "kube-node-lease"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("node-1"),
			LeaseDurationSeconds: ptr.To(int32(40)),
		},
	}
}

func TestValidateLease(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*coordinationv1.Lease)
		want   []field.ErrorType
		path   string
	}{
		{"valid", func(*coordinationv1.Lease) {}, nil, ""},
		{"duration must be positive", func(l *coordinationv1.Lease) { l.Spec.LeaseDurationSeconds = ptr.To(int32(0)) },
			[]field.ErrorType{field.ErrorTypeInvalid}, "spec.leaseDurationSeconds"},
		{"transitions non-negative", func(l *coordinationv1.Lease) { l.Spec.LeaseTransitions = ptr.To(int32(-1)) },
			[]field.ErrorType{field.ErrorTypeInvalid}, "spec.leaseTransitions"},
		{"unknown strategy", func(l *coordinationv1.Lease) {
			l.Spec.Strategy = ptr.To(coordinationv1.CoordinatedLeaseStrategy("Newest"))
		},
			[]field.ErrorType{field.ErrorTypeNotSupported}, "spec.strategy"},
		{"domain strategy allowed", func(l *coordinationv1.Lease) {
			l.Spec.Strategy = ptr.To(coordinationv1.CoordinatedLeaseStrategy("example.com/newest"))
		},
			nil, ""},
		{"preferred holder needs strategy", func(l *coordinationv1.Lease) { l.Spec.PreferredHolder = ptr.To("node-2") },
			[]field.ErrorType{field.ErrorTypeForbidden}, "spec.preferredHolder"},
		{"namespace required", func(l *coordinationv1.Lease) { l.Namespace = "" },
			[]field.ErrorType{field.ErrorTypeRequired}, "metadata.namespace"},
		{"name must be a DNS subdomain", func(l *coordinationv1.Lease) { l.Name = "Node_1" },
			[]field.ErrorType{field.ErrorTypeInvalid}, "metadata.name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lease := validLease()
			tc.mutate(lease)
			errs := ValidateLease(lease)
			if len(errs) != len(tc.want) {
				t.Fatalf("got %v, want %v at %s", errs, tc.want, tc.path)
			}
			for i, e := range errs {
				if e.Type != tc.want[i] || e.Field != tc.path {
					t.Errorf("got %v, want %s at %s", e, tc.want[i], tc.path)
				}
			}
		})
	}
}

func TestValidateLeaseUpdate(t *testing.T) {
	old := validLease()
	old.ResourceVersion = "1"
	lease := old.DeepCopy()
	lease.Spec.HolderIdentity = ptr.To("node-2")
	lease.Spec.LeaseTransitions = ptr.To(int32(1))
	if errs := ValidateLeaseUpdate(lease, old); len(errs) != 0 {
		t.Errorf("holder change refused: %v", errs)
	}
	lease.Name = "other"
	if errs := ValidateLeaseUpdate(lease, old); len(errs) != 1 || errs[0].Field != "metadata.name" {
		t.Errorf("name change: got %v", errs)
	}
}
