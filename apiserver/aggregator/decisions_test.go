package aggregator

import (
	"errors"
	"slices"
	"testing"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"
)

func apiService(group, version string, groupPriority, versionPriority int32) *apiregistrationv1.APIService {
	return &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: version + "." + group},
		Spec: apiregistrationv1.APIServiceSpec{Group: group, Version: version, GroupPriorityMinimum: groupPriority, VersionPriority: versionPriority,
			Service: &apiregistrationv1.ServiceReference{Namespace: "ns", Name: "api", Port: ptr.To[int32](443)}},
	}
}

func TestServiceChecksFailWithUpstreamsReasons(t *testing.T) {
	svc := apiService("g", "v1", 1, 1)
	clusterIP := func(ports ...corev1.ServicePort) *corev1.Service {
		return &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: ports}}
	}
	slice := func(port string, ready *bool, addrs ...string) discoveryv1.EndpointSlice {
		return discoveryv1.EndpointSlice{Ports: []discoveryv1.EndpointPort{{Name: &port}}, Endpoints: []discoveryv1.Endpoint{{Addresses: addrs, Conditions: discoveryv1.EndpointConditions{Ready: ready}}}}
	}
	for _, tc := range []struct {
		name       string
		service    *corev1.Service
		serviceErr error
		slices     []discoveryv1.EndpointSlice
		slicesErr  error
		wantOK     bool
		wantStatus apiregistrationv1.ConditionStatus
		wantReason string
		wantMsg    string
	}{
		{name: "no service", serviceErr: apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, "api"),
			wantStatus: "False", wantReason: "ServiceNotFound", wantMsg: `service/api in "ns" is not present`},
		{name: "service unreadable", serviceErr: errors.New("boom"),
			wantStatus: "Unknown", wantReason: "ServiceAccessError", wantMsg: `service/api in "ns" cannot be checked due to: boom`},
		{name: "port not on the service", service: clusterIP(corev1.ServicePort{Port: 80}),
			wantStatus: "False", wantReason: "ServicePortError", wantMsg: `service/api in "ns" is not listening on port 443`},
		{name: "no endpointslices", service: clusterIP(corev1.ServicePort{Name: "https", Port: 443}),
			wantStatus: "False", wantReason: "EndpointsNotFound", wantMsg: `cannot find endpointslices for service/api in "ns"`},
		{name: "slices unreadable", service: clusterIP(corev1.ServicePort{Name: "https", Port: 443}), slicesErr: errors.New("boom"),
			wantStatus: "Unknown", wantReason: "EndpointsAccessError", wantMsg: `service/api in "ns" cannot be checked due to: boom`},
		{name: "only a not-ready endpoint", service: clusterIP(corev1.ServicePort{Name: "https", Port: 443}), slices: []discoveryv1.EndpointSlice{slice("https", ptr.To(false), "10.0.0.1")},
			wantStatus: "False", wantReason: "MissingEndpoints", wantMsg: `endpointslices for service/api in "ns" have no addresses with port name "https"`},
		{name: "a ready endpoint on another port name", service: clusterIP(corev1.ServicePort{Name: "https", Port: 443}), slices: []discoveryv1.EndpointSlice{slice("metrics", ptr.To(true), "10.0.0.1")},
			wantStatus: "False", wantReason: "MissingEndpoints", wantMsg: `endpointslices for service/api in "ns" have no addresses with port name "https"`},
		{name: "a ready endpoint", service: clusterIP(corev1.ServicePort{Name: "https", Port: 443}), slices: []discoveryv1.EndpointSlice{slice("https", ptr.To(true), "10.0.0.1")}, wantOK: true},
		{name: "readiness unknown counts as ready", service: clusterIP(corev1.ServicePort{Name: "https", Port: 443}), slices: []discoveryv1.EndpointSlice{slice("https", nil, "10.0.0.1")}, wantOK: true},
		{name: "an ExternalName service goes to discovery", service: &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName}}, wantOK: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cond, ok := serviceChecks(svc, tc.service, tc.serviceErr, tc.slices, tc.slicesErr)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tc.wantOK, cond)
			}
			if !ok && (cond.Status != tc.wantStatus || cond.Reason != tc.wantReason || cond.Message != tc.wantMsg || cond.Type != apiregistrationv1.Available) {
				t.Errorf("condition %+v, want %s %s %q", cond, tc.wantStatus, tc.wantReason, tc.wantMsg)
			}
		})
	}
}

func TestNextConditionStampsOnlyStatusChanges(t *testing.T) {
	earlier, now := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(200, 0))
	with := func(c apiregistrationv1.APIServiceCondition) *apiregistrationv1.APIService {
		s := apiService("g", "v1", 1, 1)
		s.Status.Conditions = []apiregistrationv1.APIServiceCondition{c}
		return s
	}
	failed := apiregistrationv1.APIServiceCondition{Type: apiregistrationv1.Available, Status: "False", Reason: "FailedDiscoveryCheck", Message: "a"}
	for _, tc := range []struct {
		name        string
		svc         *apiregistrationv1.APIService
		want        apiregistrationv1.APIServiceCondition
		wantChanged bool
		wantTime    metav1.Time
	}{
		{"first condition", apiService("g", "v1", 1, 1), passed, true, now},
		{"same condition: no write", with(withTime(passed, earlier)), passed, false, earlier},
		{"status changes: new time", with(withTime(passed, earlier)), failed, true, now},
		{"only the message changes: time kept", with(withTime(failed, earlier)), func() apiregistrationv1.APIServiceCondition { c := failed; c.Message = "b"; return c }(), true, earlier},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := nextCondition(tc.svc, tc.want, now)
			if changed != tc.wantChanged || !got.LastTransitionTime.Equal(&tc.wantTime) {
				t.Errorf("changed %v at %v, want %v at %v", changed, got.LastTransitionTime, tc.wantChanged, tc.wantTime)
			}
		})
	}
}

func withTime(c apiregistrationv1.APIServiceCondition, at metav1.Time) apiregistrationv1.APIServiceCondition {
	c.LastTransitionTime = at
	return c
}

func TestDiscoveryOrdersByPriorityAndMarksStaleVersions(t *testing.T) {
	svcs := []*apiregistrationv1.APIService{
		apiService("metrics.k8s.io", "v1beta1", 100, 100),
		apiService("wardle.example.com", "v1alpha1", 1000, 10),
		apiService("wardle.example.com", "v1beta1", 900, 20),
		apiService("other.example.com", "v1", 100, 15),
	}
	list := &metav1.APIResourceList{APIResources: []metav1.APIResource{{Name: "flunders", Namespaced: true, Kind: "Flunder", Verbs: []string{"get"}}}}
	remotes := map[schema.GroupVersion]*remote{
		{Group: "wardle.example.com", Version: "v1beta1"}:  {resources: list},
		{Group: "wardle.example.com", Version: "v1alpha1"}: {resources: list, stale: true},
		// metrics.k8s.io never answered: listed in /apis, not in the
		// aggregated document.
	}
	groups, docs := discoveryOf(svcs, remotes)
	var names []string
	for _, g := range groups {
		names = append(names, g.Name)
	}
	// Group priority is the highest of a group's versions; ties by name.
	if want := []string{"wardle.example.com", "metrics.k8s.io", "other.example.com"}; !slices.Equal(names, want) {
		t.Errorf("groups %q, want %q", names, want)
	}
	if pv := groups[0].PreferredVersion.Version; pv != "v1beta1" {
		t.Errorf("preferred version %s, want the highest version priority v1beta1", pv)
	}
	if len(docs) != 1 || docs[0].Name != "wardle.example.com" || len(docs[0].Versions) != 2 {
		t.Fatalf("aggregated discovery %+v, want wardle's two versions only", docs)
	}
	if v := docs[0].Versions[1]; v.Version != "v1alpha1" || v.Freshness != apidiscoveryv2.DiscoveryFreshnessStale {
		t.Errorf("second version %s %s, want v1alpha1 Stale", v.Version, v.Freshness)
	}
}

func TestResourcesOfFoldsSubresources(t *testing.T) {
	gv := schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}
	got := resourcesOf(gv, &metav1.APIResourceList{APIResources: []metav1.APIResource{
		{Name: "pods", SingularName: "", Namespaced: true, Kind: "PodMetrics", Verbs: []string{"get", "list"}},
		{Name: "nodes", Kind: "NodeMetrics", Verbs: []string{"get", "list"}},
		{Name: "nodes/status", Kind: "NodeMetrics", Verbs: []string{"get"}},
		{Name: "pods/scale", Kind: "Scale", Group: "autoscaling", Version: "v1", Verbs: []string{"get"}},
	}})
	if len(got) != 2 || got[0].Resource != "nodes" || got[1].Resource != "pods" {
		t.Fatalf("resources %+v", got)
	}
	if got[0].Scope != apidiscoveryv2.ScopeCluster || got[1].Scope != apidiscoveryv2.ScopeNamespace {
		t.Errorf("scopes %s %s", got[0].Scope, got[1].Scope)
	}
	if s := got[0].Subresources; len(s) != 1 || s[0].Subresource != "status" || s[0].ResponseKind.Kind != "NodeMetrics" || s[0].ResponseKind.Group != gv.Group {
		t.Errorf("nodes' subresources %+v", s)
	}
	if s := got[1].Subresources; len(s) != 1 || s[0].ResponseKind.Group != "autoscaling" || s[0].ResponseKind.Version != "v1" {
		t.Errorf("a subresource of another group keeps it: %+v", s)
	}
}
