package openapi_test

import (
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"

	"github.com/kite-project/kite/apiserver/openapi"
)

// kiteResources is what the apiserver serves (issue 4), for measuring
// what New costs at start-up.
func kiteResources() []openapi.Resource {
	v1 := corev1.SchemeGroupVersion
	return []openapi.Resource{
		{GVK: v1.WithKind("Pod"), Plural: "pods", Namespaced: true, Verbs: allVerbs, Object: &corev1.Pod{}, List: &corev1.PodList{},
			Subresources: []openapi.Subresource{{Name: "status", Verbs: []string{"get", "update", "patch"}}, {Name: "binding", Verbs: []string{"create"}, Object: &corev1.Binding{}, GVK: v1.WithKind("Binding")}}},
		{GVK: v1.WithKind("Node"), Plural: "nodes", Verbs: allVerbs, Object: &corev1.Node{}, List: &corev1.NodeList{},
			Subresources: []openapi.Subresource{{Name: "status", Verbs: []string{"get", "update", "patch"}}}},
		{GVK: v1.WithKind("Namespace"), Plural: "namespaces", Verbs: allVerbs, Object: &corev1.Namespace{}, List: &corev1.NamespaceList{},
			Subresources: []openapi.Subresource{{Name: "status", Verbs: []string{"get", "update", "patch"}}, {Name: "finalize", Verbs: []string{"update"}}}},
		{GVK: v1.WithKind("ConfigMap"), Plural: "configmaps", Namespaced: true, Verbs: allVerbs, Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}},
		{GVK: v1.WithKind("Secret"), Plural: "secrets", Namespaced: true, Verbs: allVerbs, Object: &corev1.Secret{}, List: &corev1.SecretList{}},
		{GVK: v1.WithKind("Service"), Plural: "services", Namespaced: true, Verbs: allVerbs, Object: &corev1.Service{}, List: &corev1.ServiceList{}},
		{GVK: v1.WithKind("ServiceAccount"), Plural: "serviceaccounts", Namespaced: true, Verbs: allVerbs, Object: &corev1.ServiceAccount{}, List: &corev1.ServiceAccountList{}},
		{GVK: v1.WithKind("Event"), Plural: "events", Namespaced: true, Verbs: allVerbs, Object: &corev1.Event{}, List: &corev1.EventList{}},
		{GVK: eventsv1.SchemeGroupVersion.WithKind("Event"), Plural: "events", Namespaced: true, Verbs: allVerbs, Object: &eventsv1.Event{}, List: &eventsv1.EventList{}},
		{GVK: coordinationv1.SchemeGroupVersion.WithKind("Lease"), Plural: "leases", Namespaced: true, Verbs: allVerbs, Object: &coordinationv1.Lease{}, List: &coordinationv1.LeaseList{}},
	}
}

func BenchmarkNew(b *testing.B) {
	for b.Loop() {
		if _, err := openapi.New(openapi.Options{Version: "v1.37.2", Resources: kiteResources()}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestKiteResources(t *testing.T) {
	oa, err := openapi.New(openapi.Options{Version: "v1.37.2", Resources: kiteResources()})
	if err != nil {
		t.Fatal(err)
	}
	for _, def := range []string{"io.k8s.api.events.v1.Event", "io.k8s.api.core.v1.Event", "io.k8s.api.core.v1.Binding", "io.k8s.api.core.v1.Service"} {
		if _, ok := oa.V2().Definitions[def]; !ok {
			t.Errorf("no definition %s", def)
		}
	}
	if p := oa.V2().Paths.Paths["/api/v1/namespaces/{namespace}/pods/{name}/binding"]; p.Post == nil || p.Post.ID != "createCoreV1NamespacedPodBinding" {
		t.Errorf("binding path %+v", p.Post)
	}
}
