package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	applyautoscalingv1 "k8s.io/client-go/applyconfigurations/autoscaling/v1"
	"k8s.io/client-go/kubernetes"
)

// scaleCase is one resource with a scale subresource, and an object of it
// with one replica.
type scaleCase struct {
	name     string
	path     string // API path of its group version
	resource string
	object   string
}

// scaleCases are the resources upstream's TestScaleAllResources covers
// that Kite serves, plus a custom resource's scale.
func scaleCases(group string) []scaleCase {
	return []scaleCase{
		{name: "Deployment", path: "/apis/apps/v1", resource: "deployments", object: appsV1Object("Deployment")},
		{name: "ReplicaSet", path: "/apis/apps/v1", resource: "replicasets", object: appsV1Object("ReplicaSet")},
		{name: "CustomResource", path: "/apis/" + group + "/v1", resource: "gadgets",
			object: `{"apiVersion":"` + group + `/v1","kind":"Gadget","metadata":{"name":"test"},"spec":{"replicas":1}}`},
	}
}

func appsV1Object(kind string) string {
	return fmt.Sprintf(`{"apiVersion":"apps/v1","kind":%q,"metadata":{"name":"test"},"spec":{"replicas":1,
		"selector":{"matchLabels":{"app":"nginx"}},
		"template":{"metadata":{"labels":{"app":"nginx"}},"spec":{"containers":[{"name":"nginx","image":"nginx:latest"}]}}}}`, kind)
}

// gadgets is a CRD whose v1 has a scale subresource at .spec.replicas.
func gadgets(group string) *apiextensionsv1.CustomResourceDefinition {
	intType := apiextensionsv1.JSONSchemaProps{Type: "integer"}
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
					Scale:  &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"},
				},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec":   {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"replicas": intType}},
						"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"replicas": intType}},
					},
				}},
			}},
		},
	}
}

// TestScaleSubresourceFieldOwnership is upstream's TestScaleAllResources
// (test/integration/apiserver/apply/scale_test.go): writes and applies
// of /scale own the parent's spec.replicas, an apply of the parent then
// conflicts with them, an apply of the Scale conflicts with the parent's
// owner, and an apply of the same value shares the field.
func TestScaleSubresourceFieldOwnership(t *testing.T) {
	ctx, cancel := contextWithTimeout(t, 60*time.Second)
	defer cancel()
	const group = "scaleapply.example.com"
	if _, err := createCRD(t, ctx, gadgets(group)); err != nil {
		t.Fatal(err)
	}
	defer deleteCRD(t, ctx, "gadgets."+group)
	waitCRD(t, ctx, "gadgets."+group, established)
	client := clientset(t)
	rc := client.CoreV1().RESTClient()

	for i, tc := range scaleCases(group) {
		t.Run(tc.name, func(t *testing.T) {
			ns := fmt.Sprintf("scale-apply-%d", i)
			createNamespace(t, client, ns)
			apply := func(sub, manager string, force bool, body string) error {
				req := rc.Patch(types.ApplyPatchType).AbsPath(tc.path).Namespace(ns).Resource(tc.resource).Name("test").
					Param("fieldManager", manager).Body([]byte(body))
				if sub != "" {
					req = req.SubResource(sub)
				}
				if force {
					req = req.Param("force", "true")
				}
				return req.Do(ctx).Error()
			}
			scaleBody := func(replicas int) string {
				return fmt.Sprintf(`{"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":"test","namespace":%q},"spec":{"replicas":%d}}`, ns, replicas)
			}
			mergeScale := func(manager, patch string) {
				t.Helper()
				err := rc.Patch(types.MergePatchType).AbsPath(tc.path).Namespace(ns).Resource(tc.resource).Name("test").SubResource("scale").
					Param("fieldManager", manager).Body([]byte(patch)).Do(ctx).Error()
				if err != nil {
					t.Fatalf("merge patch of scale by %s: %v", manager, err)
				}
			}
			expect := func(step string, replicas int64, owners ...string) {
				t.Helper()
				got, gotOwners := replicasAndOwners(t, ctx, client, tc, ns)
				if got != replicas || !slices.Equal(gotOwners, owners) {
					t.Fatalf("%s: replicas %d owned by %v, want %d owned by %v", step, got, gotOwners, replicas, owners)
				}
			}

			if err := apply("", "apply_test", false, tc.object); err != nil {
				t.Fatalf("create by apply: %v", err)
			}
			expect("created by apply", 1, "apply_test")

			mergeScale("scale_test", `{"spec":{"replicas":5}}`)
			expect("scaled by merge patch", 5, "scale_test")

			if err := apply("", "apply_test", false, tc.object); !apierrors.IsConflict(err) {
				t.Fatalf("re-apply of the object after a scale: %v, want a conflict", err)
			}
			if err := apply("", "apply_test", true, tc.object); err != nil {
				t.Fatalf("forced re-apply: %v", err)
			}
			expect("forced re-apply", 1, "apply_test")

			err := apply("scale", "apply_scale", false, scaleBody(17))
			if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "apply_test") {
				t.Fatalf("apply of the Scale against the object's owner: %v, want a conflict naming apply_test", err)
			}
			if err := apply("scale", "apply_scale", true, scaleBody(17)); err != nil {
				t.Fatalf("forced apply of the Scale: %v", err)
			}
			expect("forced Scale apply", 17, "apply_scale")

			err = rc.Put().AbsPath(tc.path).Namespace(ns).Resource(tc.resource).Name("test").SubResource("scale").
				Param("fieldManager", "replace_test").Body([]byte(scaleBody(7))).Do(ctx).Error()
			if err != nil {
				t.Fatalf("PUT of the Scale: %v", err)
			}
			expect("Scale replaced", 7, "replace_test")

			if err := apply("scale", "co_owning_test", false, scaleBody(7)); err != nil {
				t.Fatalf("apply of the Scale's current value: %v", err)
			}
			expect("same value applied", 7, "co_owning_test", "replace_test")

			mergeScale("scale_test", `{"spec":{"replicas":5}}`)
			expect("scaled again", 5, "scale_test")

			// A Scale's status is not the object's: patching it changes
			// nothing and gives no one replicas.
			mergeScale("status_test", `{"status":{"replicas":42}}`)
			expect("Scale status patched", 5, "scale_test")

			if err := apply("scale", "wrong_kind", true, tc.object); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "invalid object type") {
				t.Fatalf("apply of a %s to its Scale: %v, want 400 invalid object type", tc.name, err)
			}
			expect("wrong kind refused", 5, "scale_test")
		})
	}
}

// replicasAndOwners returns the object's spec.replicas and the managers
// whose managedFields entries hold it, sorted; each must be apiVersion
// of the object, and a Scale writer's entry says subresource scale.
func replicasAndOwners(t *testing.T, ctx context.Context, client kubernetes.Interface, tc scaleCase, ns string) (int64, []string) {
	t.Helper()
	data, err := client.CoreV1().RESTClient().Get().AbsPath(tc.path, "namespaces", ns, tc.resource, "test").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	replicas, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	var owners []string
	for _, e := range obj.GetManagedFields() {
		var fields map[string]any
		if err := json.Unmarshal(e.FieldsV1.Raw, &fields); err != nil {
			t.Fatal(err)
		}
		spec, _ := fields["f:spec"].(map[string]any)
		if _, ok := spec["f:replicas"]; !ok {
			continue
		}
		if e.APIVersion != obj.GetAPIVersion() {
			t.Errorf("%s owns replicas as %s, want %s", e.Manager, e.APIVersion, obj.GetAPIVersion())
		}
		if strings.HasSuffix(e.Manager, "_scale") || e.Manager == "scale_test" || e.Manager == "replace_test" || e.Manager == "co_owning_test" {
			if e.Subresource != "scale" {
				t.Errorf("%s's entry has subresource %q, want scale", e.Manager, e.Subresource)
			}
		}
		owners = append(owners, e.Manager)
	}
	slices.Sort(owners)
	return replicas, owners
}

// TestApplyScaleWithClients applies Scales with client-go's ApplyScale,
// and shows what kubectl apply --server-side --subresource=scale does:
// the same as against kube-apiserver, since kubectl can send neither a
// Scale (it maps a file's kind through discovery, which lists Scale only
// as the kind of subresources) nor the parent (the Scale's field manager
// takes only Scales).
func TestApplyScaleWithClients(t *testing.T) {
	ctx, cancel := contextWithTimeout(t, 60*time.Second)
	defer cancel()
	client := clientset(t)
	const ns = "scale-apply-clients"
	createNamespace(t, client, ns)
	kubectl(t, "-n", ns, "create", "deployment", "web", "--image=busybox", "--replicas=2", "--", "sleep", "3600")

	scale := applyautoscalingv1.Scale().WithSpec(applyautoscalingv1.ScaleSpec().WithReplicas(4))
	_, err := client.AppsV1().Deployments(ns).ApplyScale(ctx, "web", scale, metav1.ApplyOptions{FieldManager: "hpa"})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "kubectl-create") {
		t.Fatalf("ApplyScale of replicas kubectl create set: %v, want a conflict naming kubectl-create", err)
	}
	sc, err := client.AppsV1().Deployments(ns).ApplyScale(ctx, "web", scale, metav1.ApplyOptions{FieldManager: "hpa", Force: true})
	if err != nil {
		t.Fatalf("forced ApplyScale: %v", err)
	}
	if sc.Spec.Replicas != 4 || sc.Status.Selector != "app=web" || sc.Name != "web" || len(sc.ManagedFields) != 0 {
		t.Errorf("ApplyScale answered %+v", sc)
	}
	d, err := client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var owner *metav1.ManagedFieldsEntry
	for i, e := range d.ManagedFields {
		if e.Manager == "hpa" {
			owner = &d.ManagedFields[i]
		}
	}
	if *d.Spec.Replicas != 4 || owner == nil || owner.Operation != metav1.ManagedFieldsOperationApply || owner.Subresource != "scale" ||
		owner.APIVersion != "apps/v1" || string(owner.FieldsV1.Raw) != `{"f:spec":{"f:replicas":{}}}` {
		t.Errorf("after ApplyScale: replicas %d, hpa's entry %+v", *d.Spec.Replicas, owner)
	}

	dryRun, err := client.AppsV1().Deployments(ns).ApplyScale(ctx, "web", applyautoscalingv1.Scale().WithSpec(applyautoscalingv1.ScaleSpec().WithReplicas(9)),
		metav1.ApplyOptions{FieldManager: "hpa", DryRun: []string{metav1.DryRunAll}})
	if err != nil || dryRun.Spec.Replicas != 9 {
		t.Fatalf("dry-run ApplyScale: %v %+v", err, dryRun)
	}
	if d, _ := client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{}); *d.Spec.Replicas != 4 {
		t.Errorf("a dry-run ApplyScale changed replicas to %d", *d.Spec.Replicas)
	}

	file := filepath.Join(t.TempDir(), "scale.yaml")
	for _, c := range []struct{ manifest, want string }{
		{"apiVersion: autoscaling/v1\nkind: Scale\nmetadata:\n  name: web\nspec:\n  replicas: 6\n", `no matches for kind "Scale" in version "autoscaling/v1"`},
		{"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 6\n", "Error from server (BadRequest): invalid object type: apps/v1, Kind=Deployment"},
	} {
		if err := os.WriteFile(file, []byte(c.manifest), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := kubectlErr(t, "-n", ns, "apply", "--server-side", "--subresource=scale", "-f", file)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("kubectl apply --server-side --subresource=scale of\n%s: %v\n%s\nwant %q", c.manifest, err, out, c.want)
		}
	}
	if d, _ := client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{}); *d.Spec.Replicas != 4 {
		t.Errorf("a refused kubectl apply changed replicas to %d", *d.Spec.Replicas)
	}
}

// TestScaleUpdatePreconditionsAndUnsetReplicas: a Scale written with a
// uid other than the object's is a conflict (built-in kinds, as
// upstream's scaleUpdatedObjectInfo); a custom resource without spec
// replicas has no Scale to read (500) but one to write, which sets them,
// unless the write leaves them unset (400), as upstream's.
func TestScaleUpdatePreconditionsAndUnsetReplicas(t *testing.T) {
	ctx, cancel := contextWithTimeout(t, 60*time.Second)
	defer cancel()
	client := clientset(t)
	const ns = "scale-preconditions"
	createNamespace(t, client, ns)
	kubectl(t, "-n", ns, "create", "deployment", "web", "--image=busybox", "--replicas=2", "--", "sleep", "3600")
	sc, err := client.AppsV1().Deployments(ns).GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sc.UID, sc.Spec.Replicas = "not-its-uid", 5
	_, err = client.AppsV1().Deployments(ns).UpdateScale(ctx, "web", sc, metav1.UpdateOptions{})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "Precondition failed: UID in precondition: not-its-uid") {
		t.Errorf("Scale with another uid: %v, want a conflict", err)
	}
	if d, _ := client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{}); *d.Spec.Replicas != 2 {
		t.Errorf("a refused Scale changed replicas to %d", *d.Spec.Replicas)
	}

	const group = "scaleunset.example.com"
	if _, err := createCRD(t, ctx, gadgets(group)); err != nil {
		t.Fatal(err)
	}
	defer deleteCRD(t, ctx, "gadgets."+group)
	waitCRD(t, ctx, "gadgets."+group, established)
	base := "/apis/" + group + "/v1/namespaces/" + ns + "/gadgets"
	for range 200 {
		if code, _, _ := raw(t, "POST", base, "application/json", "application/json", []byte(`{"apiVersion":"`+group+`/v1","kind":"Gadget","metadata":{"name":"bare"},"spec":{}}`)); code == 201 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if code, st, _ := raw(t, "GET", base+"/bare/scale", "", "application/json", nil); code != 500 || !strings.Contains(st.Message, `the spec replicas field ".spec.replicas" does not exist`) {
		t.Errorf("GET scale without replicas: %d %q, want 500", code, st.Message)
	}
	if code, st, _ := raw(t, "PATCH", base+"/bare/scale", "application/merge-patch+json", "application/json", []byte(`{"status":{"replicas":1}}`)); code != 400 || !strings.Contains(st.Message, `the spec replicas field ".spec.replicas" cannot be empty`) {
		t.Errorf("a Scale patch leaving replicas unset: %d %q, want 400", code, st.Message)
	}
	if code, st, _ := raw(t, "PATCH", base+"/bare/scale", "application/merge-patch+json", "application/json", []byte(`{"spec":{"replicas":3}}`)); code != 200 {
		t.Errorf("a Scale patch setting replicas: %d %q", code, st.Message)
	}
	if out := kubectl(t, "-n", ns, "get", "gadgets."+group, "bare", "-o", "jsonpath={.spec.replicas}"); out != "3" {
		t.Errorf("spec.replicas %q after the Scale patch, want 3", out)
	}

	// The replicas paths stay valid whatever writes them, as upstream's
	// ValidateScaleSpec and ValidateScaleStatus.
	for _, c := range []struct{ path, patch, want string }{
		{"/bare", `{"spec":{"replicas":-2}}`, `.spec.replicas: Invalid value: -2: should be a non-negative integer`},
		{"/bare", `{"spec":{"replicas":3000000000}}`, `.spec.replicas: Invalid value: 3000000000: should be less than or equal to 2147483647`},
		{"/bare/status", `{"status":{"replicas":-1}}`, `.status.replicas: Invalid value: -1: should be a non-negative integer`},
		{"/bare/scale", `{"spec":{"replicas":-1}}`, `.spec.replicas: Invalid value: -1: should be a non-negative integer`},
	} {
		code, st, _ := raw(t, "PATCH", base+c.path, "application/merge-patch+json", "application/json", []byte(c.patch))
		if code != 422 || !strings.Contains(st.Message, `Gadget.`+group+` "bare" is invalid: `+c.want) {
			t.Errorf("PATCH %s %s: %d %q, want 422 %q", c.path, c.patch, code, st.Message, c.want)
		}
	}
	if out := kubectl(t, "-n", ns, "get", "gadgets."+group, "bare", "-o", "jsonpath={.spec.replicas}"); out != "3" {
		t.Errorf("spec.replicas %q after refused writes, want 3", out)
	}
}
