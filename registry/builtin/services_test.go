package builtin

import (
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilptr "k8s.io/utils/ptr"

	"github.com/kite-project/kite/apis/core/defaults"
)

// TestServiceCreateAndUpdateFillWhatUpstreamFillsBeforeValidation runs
// the service strategy's create and update preparation and validation on
// the inputs upstream's service REST reconciles before it validates.
func TestServiceCreateAndUpdateFillWhatUpstreamFillsBeforeValidation(t *testing.T) {
	strat := Services()
	svc := func(mutate func(*v1.ServiceSpec)) *v1.Service {
		s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"},
			Spec: v1.ServiceSpec{Selector: map[string]string{"app": "a"}, Ports: []v1.ServicePort{{Name: "web", Port: 80}}}}
		if mutate != nil {
			mutate(&s.Spec)
		}
		return s
	}
	headless := func(s *v1.ServiceSpec) { s.ClusterIP = v1.ClusterIPNone }
	selectorless := func(s *v1.ServiceSpec) { s.ClusterIP, s.Selector = v1.ClusterIPNone, nil }
	v4, v6 := v1.IPv4Protocol, v1.IPv6Protocol
	single, require := v1.IPFamilyPolicySingleStack, v1.IPFamilyPolicyRequireDualStack
	tests := []struct {
		name string
		// old is the stored object (nil: a create), prepared as created.
		old, svc *v1.Service
		wantIPs  []string
		wantFams []v1.IPFamily
		// wantPolicy "" means none.
		wantPolicy v1.IPFamilyPolicy
		// wantErr is a part of the validation error; "" means valid.
		wantErr string
	}{
		{name: "headless create fills clusterIPs, one family", svc: svc(headless),
			wantIPs: []string{"None"}, wantFams: []v1.IPFamily{v4}, wantPolicy: single},
		{name: "headless create without selector gets both families", svc: svc(selectorless),
			wantIPs: []string{"None"}, wantFams: []v1.IPFamily{v4, v6}, wantPolicy: require},
		{name: "headless without selector asking SingleStack keeps one", svc: svc(func(s *v1.ServiceSpec) { selectorless(s); s.IPFamilyPolicy = &single }),
			wantIPs: []string{"None"}, wantFams: []v1.IPFamily{v4}, wantPolicy: single},
		{name: "create without cluster IP gets the primary family", svc: svc(nil),
			wantFams: []v1.IPFamily{v4}, wantPolicy: single},
		{name: "a given IPv6 clusterIP on an IPv4 cluster is refused", svc: svc(func(s *v1.ServiceSpec) { s.ClusterIP = "fd00::10" }),
			wantErr: "IPv6 is not configured on this cluster"},
		{name: "RequireDualStack on a single-stack cluster is refused", svc: svc(func(s *v1.ServiceSpec) { s.IPFamilyPolicy = &require }),
			wantErr: "this cluster is not configured for dual-stack services"},
		{name: "SingleStack with two families is refused", svc: svc(func(s *v1.ServiceSpec) { headless(s); s.IPFamilyPolicy = &single; s.IPFamilies = []v1.IPFamily{v4, v6} }),
			wantErr: "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"},
		{name: "ExternalName gets no families", svc: svc(func(s *v1.ServiceSpec) {
			s.Type, s.ExternalName, s.Selector, s.Ports = v1.ServiceTypeExternalName, "db.example.com", nil, nil
		}),
			wantFams: nil},
		{name: "update without the server's fields keeps them", old: svc(selectorless), svc: svc(selectorless),
			wantIPs: []string{"None"}, wantFams: []v1.IPFamily{v4, v6}, wantPolicy: require},
		{name: "update of a headless service with clusterIPs only", old: svc(headless), svc: svc(func(s *v1.ServiceSpec) { s.ClusterIPs = []string{"None"} }),
			wantIPs: []string{"None"}, wantFams: []v1.IPFamily{v4}, wantPolicy: single},
		{name: "update dropping a family under RequireDualStack is refused", old: svc(selectorless),
			svc: svc(func(s *v1.ServiceSpec) {
				selectorless(s)
				s.IPFamilies = []v1.IPFamily{v4}
				s.IPFamilyPolicy = &require
			}),
			wantErr: "must be 'SingleStack' to release the secondary IP family"},
		{name: "update to SingleStack releases the secondary family", old: svc(selectorless),
			svc: svc(func(s *v1.ServiceSpec) {
				selectorless(s)
				s.IPFamilies = []v1.IPFamily{v4, v6}
				s.IPFamilyPolicy = &single
			}),
			wantIPs: []string{"None"}, wantFams: []v1.IPFamily{v4}, wantPolicy: single},
		{name: "update to ExternalName drops what the server set", old: svc(headless),
			svc: svc(func(s *v1.ServiceSpec) {
				s.Type, s.ExternalName, s.Selector, s.Ports = v1.ServiceTypeExternalName, "db.example.com", nil, nil
				s.ClusterIP, s.ClusterIPs, s.IPFamilies, s.IPFamilyPolicy = v1.ClusterIPNone, []string{"None"}, []v1.IPFamily{v4}, &single
			})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var old *v1.Service
			if tt.old != nil {
				old = tt.old.DeepCopy()
				old.ResourceVersion = "1"
				defaults.Service(old)
				strat.PrepareForCreate(old)
				if errs := strat.Validate(old); len(errs) > 0 {
					t.Fatalf("stored object invalid: %v", errs)
				}
			}
			got := tt.svc.DeepCopy()
			defaults.Service(got)
			var errs []string
			if old == nil {
				strat.PrepareForCreate(got)
				for _, e := range strat.Validate(got) {
					errs = append(errs, e.Error())
				}
			} else {
				got.ResourceVersion = old.ResourceVersion
				strat.PrepareForUpdate(got, old)
				for _, e := range strat.ValidateUpdate(got, old) {
					errs = append(errs, e.Error())
				}
			}
			if tt.wantErr != "" {
				if !strings.Contains(strings.Join(errs, "; "), tt.wantErr) {
					t.Fatalf("errors %v, want one with %q", errs, tt.wantErr)
				}
				return
			}
			if len(errs) > 0 {
				t.Fatalf("invalid: %v", errs)
			}
			if !reflect.DeepEqual(got.Spec.ClusterIPs, tt.wantIPs) || !reflect.DeepEqual(got.Spec.IPFamilies, tt.wantFams) || utilptr.Deref(got.Spec.IPFamilyPolicy, "") != tt.wantPolicy {
				t.Errorf("clusterIPs %v ipFamilies %v ipFamilyPolicy %q; want %v %v %q",
					got.Spec.ClusterIPs, got.Spec.IPFamilies, utilptr.Deref(got.Spec.IPFamilyPolicy, ""), tt.wantIPs, tt.wantFams, tt.wantPolicy)
			}
		})
	}
}
