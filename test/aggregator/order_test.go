package aggregator_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/kite-project/kite/pki"
)

// TestRemoteGroupsAreOrderedByTheirAPIServicePriority registers three
// groups of one extension server with group priorities above every local
// group, between two local ones, and below them all, and checks that
// /apis and aggregated discovery list each where kube-aggregator does:
// among all groups by groupPriorityMinimum, not after the local ones.
func TestRemoteGroupsAreOrderedByTheirAPIServicePriority(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(shared.RESTConfig())
	ns, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "order-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := pki.Ensure(t.TempDir(), pki.Options{Hosts: []string{"api." + ns.Name + ".svc"}})
	if err != nil {
		t.Fatal(err)
	}
	// Any group version's discovery: one resource.
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gv := strings.TrimPrefix(r.URL.Path, "/apis/")
		if strings.Count(gv, "/") != 1 {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(&metav1.APIResourceList{
			TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv,
			APIResources: []metav1.APIResource{{Name: "things", Kind: "Thing", Verbs: []string{"get"}}},
		})
	}))
	srv.TLS = bundle.TLSConfig.Clone()
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ext := &extension{srv: srv}
	port := ext.port(t)
	if _, err := cs.CoreV1().Services(ns.Name).Create(t.Context(), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "api"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost", Ports: []corev1.ServicePort{{Port: port}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Local group priorities (kube-apiserver's): authentication.k8s.io
	// 17700, authorization.k8s.io 17600; metrics.k8s.io (Kite's own, as
	// metrics-server's APIService) 100.
	remote := map[string]int32{"top.order.example": 20000, "mid.order.example": 17650, "low.order.example": 1}
	agg := aggregatorclient.NewForConfigOrDie(shared.RESTConfig()).ApiregistrationV1().APIServices()
	for g, p := range remote {
		name := "v1." + g
		if _, err := agg.Create(t.Context(), &apiregistrationv1.APIService{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: apiregistrationv1.APIServiceSpec{
				Group: g, Version: "v1", GroupPriorityMinimum: p, VersionPriority: 10,
				Service:  &apiregistrationv1.ServiceReference{Namespace: ns.Name, Name: "api", Port: &port},
				CABundle: bundle.CAPEM,
			},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { agg.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	// checkOrder says what is wrong with names, the groups in order.
	checkOrder := func(names []string) []string {
		at := func(g string) int { return slices.Index(names, g) }
		var wrong []string
		if at("top.order.example") != 0 {
			wrong = append(wrong, "top.order.example (20000) not first")
		}
		if a, m, z := at("authentication.k8s.io"), at("mid.order.example"), at("authorization.k8s.io"); a < 0 || m != a+1 || z != m+1 {
			wrong = append(wrong, "mid.order.example (17650) not between authentication.k8s.io (17700) and authorization.k8s.io (17600)")
		}
		if at("low.order.example") != len(names)-1 {
			wrong = append(wrong, "low.order.example (1) not last")
		}
		if m, l := at("metrics.k8s.io"), at("low.order.example"); m >= 0 && m != l-1 {
			wrong = append(wrong, "metrics.k8s.io (100) not right before low.order.example (1)")
		}
		return wrong
	}
	rest := cs.Discovery().RESTClient()
	for _, tc := range []struct {
		name   string
		accept string
		groups func(body []byte) ([]string, error)
	}{{
		name:   "/apis",
		accept: "application/json",
		groups: func(body []byte) ([]string, error) {
			var list metav1.APIGroupList
			err := json.Unmarshal(body, &list)
			var names []string
			for _, g := range list.Groups {
				names = append(names, g.Name)
			}
			return names, err
		},
	}, {
		name:   "aggregated /apis",
		accept: "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
		groups: func(body []byte) ([]string, error) {
			var list apidiscoveryv2.APIGroupDiscoveryList
			err := json.Unmarshal(body, &list)
			var names []string
			for _, g := range list.Items {
				names = append(names, g.Name)
			}
			return names, err
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			// Until every remote group is listed: aggregated discovery
			// lists a group once its server has answered.
			var names []string
			err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
				body, err := rest.Get().AbsPath("/apis").SetHeader("Accept", tc.accept).DoRaw(ctx)
				if err != nil {
					return false, err
				}
				if names, err = tc.groups(body); err != nil {
					return false, err
				}
				for g := range remote {
					if !slices.Contains(names, g) {
						return false, nil
					}
				}
				return true, nil
			})
			if err != nil {
				t.Fatalf("remote groups not all listed: %v (have %q)", err, names)
			}
			if wrong := checkOrder(names); len(wrong) > 0 {
				t.Errorf("groups %q:\n%s", names, strings.Join(wrong, "\n"))
			}
		})
	}
}
