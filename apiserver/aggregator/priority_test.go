package aggregator

import (
	"testing"

	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// TestGroupPriorityIsTheFirstAPIServiceInUpstreamsOrder: a group ranks by
// the highest groupPriorityMinimum of its APIServices, and by the name of
// the first APIService at that priority (SortedByGroupAndVersion's order).
func TestGroupPriorityIsTheFirstAPIServiceInUpstreamsOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		svcs []*apiregistrationv1.APIService
		want groupPriority
	}{{
		name: "one version",
		svcs: []*apiregistrationv1.APIService{apiService("a.example", "v1", 100, 10)},
		want: groupPriority{minimum: 100, apiService: "v1.a.example"},
	}, {
		name: "the highest of its versions",
		svcs: []*apiregistrationv1.APIService{apiService("a.example", "v1", 100, 10), apiService("a.example", "v2", 300, 10), apiService("a.example", "v1beta1", 200, 10)},
		want: groupPriority{minimum: 300, apiService: "v2.a.example"},
	}, {
		name: "at equal priority the first name",
		svcs: []*apiregistrationv1.APIService{apiService("a.example", "v1beta1", 100, 10), apiService("a.example", "v1", 100, 10)},
		want: groupPriority{minimum: 100, apiService: "v1.a.example"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := prioritiesOf(tc.svcs)["a.example"]; got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
