package regress

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1apply "k8s.io/client-go/applyconfigurations/core/v1"
)

// TestHeadlessServiceIsAcceptedByEveryVerb creates, updates and applies
// headless Services that give clusterIP None without clusterIPs, as old
// clients and most manifests do: kube-apiserver fills clusterIPs from
// clusterIP, and ipFamilies and ipFamilyPolicy (RequireDualStack for a
// headless Service without selector), before it validates.
func TestHeadlessServiceIsAcceptedByEveryVerb(t *testing.T) {
	ns := namespace(t, "regress-headless")
	services := clientset(t).CoreV1().Services(ns)
	headless := func(name string, selector map[string]string) *v1.Service {
		return &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1.ServiceSpec{ClusterIP: v1.ClusterIPNone, Selector: selector, Ports: []v1.ServicePort{{Name: "web", Port: 80}}}}
	}
	type want struct {
		families []v1.IPFamily
		policy   v1.IPFamilyPolicy
	}
	withSelector := want{[]v1.IPFamily{v1.IPv4Protocol}, v1.IPFamilyPolicySingleStack}
	selectorless := want{[]v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}, v1.IPFamilyPolicyRequireDualStack}
	check := func(t *testing.T, verb string, got *v1.Service, w want) {
		t.Helper()
		if !slices.Equal(got.Spec.ClusterIPs, []string{v1.ClusterIPNone}) || got.Spec.ClusterIP != v1.ClusterIPNone {
			t.Errorf("%s: clusterIP %q clusterIPs %v, want None and [None]", verb, got.Spec.ClusterIP, got.Spec.ClusterIPs)
		}
		if !slices.Equal(got.Spec.IPFamilies, w.families) || got.Spec.IPFamilyPolicy == nil || *got.Spec.IPFamilyPolicy != w.policy {
			t.Errorf("%s: ipFamilies %v ipFamilyPolicy %v, want %v %s", verb, got.Spec.IPFamilies, ptrValue(got.Spec.IPFamilyPolicy), w.families, w.policy)
		}
	}

	for _, tc := range []struct {
		name     string
		selector map[string]string
		want     want
	}{
		{"with-selector", map[string]string{"app": "db"}, withSelector},
		{"selectorless", nil, selectorless},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			created, err := services.Create(ctx, headless("create-"+tc.name, tc.selector), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			check(t, "create", created, tc.want)

			// A PUT of the object as a manifest has it, without the
			// server's fields: they come back from the stored object.
			put := headless("create-"+tc.name, tc.selector)
			put.ResourceVersion = created.ResourceVersion
			put.Labels = map[string]string{"updated": "yes"}
			updated, err := services.Update(ctx, put, metav1.UpdateOptions{})
			if err != nil {
				t.Fatalf("update: %v", err)
			}
			check(t, "update", updated, tc.want)

			apply := func(verb string) {
				cfg := corev1apply.Service("apply-"+tc.name, ns).WithSpec(corev1apply.ServiceSpec().
					WithClusterIP(v1.ClusterIPNone).WithSelector(tc.selector).
					WithPorts(corev1apply.ServicePort().WithName("web").WithPort(80)))
				applied, err := services.Apply(ctx, cfg, metav1.ApplyOptions{FieldManager: "regress", Force: true})
				if err != nil {
					t.Fatalf("%s: %v", verb, err)
				}
				check(t, verb, applied, tc.want)
			}
			apply("apply (create)")
			apply("apply (update)")
		})
	}

	// kubectl apply --server-side, as a manifest is usually installed.
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Service
metadata:
  name: kubectl-headless
  namespace: %s
spec:
  clusterIP: None
  selector: {app: db}
  ports:
  - name: web
    port: 80
`, ns)
	for range 2 {
		mustKubectl(t, manifest, "apply", "--server-side", "-f", "-")
	}
	got, err := services.Get(t.Context(), "kubectl-headless", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check(t, "kubectl apply --server-side", got, withSelector)

	// A PUT that turns the Service into an ExternalName one after a read
	// drops the fields that no longer apply, as upstream's
	// dropTypeDependentFields, instead of refusing them.
	got.Spec.Type = v1.ServiceTypeExternalName
	got.Spec.ExternalName = "db.example.com"
	got.Spec.Selector = nil
	got.Spec.Ports = nil
	external, err := services.Update(t.Context(), got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update to ExternalName: %v", err)
	}
	if external.Spec.ClusterIP != "" || external.Spec.ClusterIPs != nil || external.Spec.IPFamilies != nil || external.Spec.IPFamilyPolicy != nil {
		t.Errorf("ExternalName service keeps clusterIP %q %v, families %v, policy %v", external.Spec.ClusterIP, external.Spec.ClusterIPs, external.Spec.IPFamilies, ptrValue(external.Spec.IPFamilyPolicy))
	}
}
