package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// waitCRD polls the CRD until ok says so.
func waitCRD(t *testing.T, ctx context.Context, name string, ok func(*apiextensionsv1.CustomResourceDefinition) bool) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var crd *apiextensionsv1.CustomResourceDefinition
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		c, err := getCRD(t, ctx, name)
		if err != nil {
			return false, nil
		}
		crd = c
		return ok(c), nil
	})
	if err != nil {
		t.Fatalf("CRD %s: condition not reached; status %+v", name, crd.Status)
	}
	return crd
}

func established(c *apiextensionsv1.CustomResourceDefinition) bool {
	return condition(c, apiextensionsv1.Established).Status == apiextensionsv1.ConditionTrue
}

func deleteCRD(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if err := crdClient(t).Delete().Resource("customresourcedefinitions").Name(name).Do(ctx).Error(); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("delete CRD %s: %v", name, err)
	}
}

// TestCRDNameConflictIsConditioned creates a second CRD in a group whose
// kind is taken: it is stored but conditioned NamesAccepted=False and not
// Established, as upstream, and never served.
func TestCRDNameConflictIsConditioned(t *testing.T) {
	ctx, cancel := contextWithTimeout(t, 30*time.Second)
	defer cancel()
	const group = "conflict.example.com"
	if _, err := createCRD(t, ctx, crontabs(group)); err != nil {
		t.Fatal(err)
	}
	defer deleteCRD(t, ctx, "crontabs."+group)
	waitCRD(t, ctx, "crontabs."+group, established)
	other := crontabs(group)
	other.Name = "othertabs." + group
	other.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: "othertabs", Singular: "othertab", Kind: "CronTab"}
	if _, err := createCRD(t, ctx, other); err != nil {
		t.Fatal(err)
	}
	defer deleteCRD(t, ctx, other.Name)
	crd := waitCRD(t, ctx, other.Name, func(c *apiextensionsv1.CustomResourceDefinition) bool {
		return condition(c, apiextensionsv1.NamesAccepted).Status == apiextensionsv1.ConditionFalse
	})
	// Kind and its defaulted list kind both conflict; as upstream, the
	// last check's reason is the one reported.
	if c := condition(crd, apiextensionsv1.NamesAccepted); c.Reason != "ListKindConflict" || c.Message != `"CronTabList" is already in use` {
		t.Errorf("NamesAccepted %+v", c)
	}
	if c := condition(crd, apiextensionsv1.Established); c.Status != apiextensionsv1.ConditionFalse || c.Reason != "NotAccepted" {
		t.Errorf("Established %+v, want False/NotAccepted", c)
	}
	if code, _, _ := raw(t, "GET", "/apis/"+group+"/v1/othertabs", "", "application/json", nil); code != http.StatusNotFound {
		t.Errorf("conflicting resource served: GET %d", code)
	}
}

// TestCRDDeletionWaitsForInstances deletes a CRD whose instance has a
// finalizer: the CRD stays Terminating/InstanceDeletionInProgress,
// creates are refused with 403 and discovery drops create, update and
// patch; once the finalizer is removed the instance and then the CRD go.
func TestCRDDeletionWaitsForInstances(t *testing.T) {
	ctx, cancel := contextWithTimeout(t, 60*time.Second)
	defer cancel()
	const group = "terminating.example.com"
	name := "crontabs." + group
	if _, err := createCRD(t, ctx, crontabs(group)); err != nil {
		t.Fatal(err)
	}
	defer deleteCRD(t, ctx, name)
	waitCRD(t, ctx, name, established)
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "crontabs"}
	dyn := dynamic.NewForConfigOrDie(config(t)).Resource(gvr).Namespace("default")
	var err error
	for range 200 { // served within a moment of Established
		_, err = dyn.Create(ctx, crontab(group, "held", []string{"example.com/hold"}), metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	deleteCRD(t, ctx, name)
	crd := waitCRD(t, ctx, name, func(c *apiextensionsv1.CustomResourceDefinition) bool {
		return condition(c, apiextensionsv1.Terminating).Reason == "InstanceDeletionInProgress"
	})
	if !slices.Contains(crd.Finalizers, apiextensionsv1.CustomResourceCleanupFinalizer) || crd.DeletionTimestamp == nil {
		t.Errorf("terminating CRD: finalizers %v, deletionTimestamp %v", crd.Finalizers, crd.DeletionTimestamp)
	}
	_, err = dyn.Create(ctx, crontab(group, "late", nil), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "create not allowed while custom resource definition is terminating") {
		t.Errorf("create while terminating: %v, want 403", err)
	}
	list, err := discovery.NewDiscoveryClientForConfigOrDie(config(t)).ServerResourcesForGroupVersion(group + "/v1")
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	for _, r := range list.APIResources {
		if r.Name == "crontabs" && (slices.Contains(r.Verbs, "create") || slices.Contains(r.Verbs, "patch")) {
			t.Errorf("terminating resource's verbs %v", r.Verbs)
		}
	}
	if _, err := dyn.Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("remove the instance's finalizer: %v", err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := getCRD(t, ctx, name)
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatal("CRD still there after its last instance went")
	}
}

func crontab(group, name string, finalizers []string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1", "kind": "CronTab",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"image": "img"},
	}}
	u.SetFinalizers(finalizers)
	return u
}

// TestCRDVersionsShareObjects serves two versions with conversion None:
// an object written through one reads through the other with its
// apiVersion rewritten, etcd holds the storage version, and a new storage
// version is recorded in storedVersions.
func TestCRDVersionsShareObjects(t *testing.T) {
	ctx, cancel := contextWithTimeout(t, 60*time.Second)
	defer cancel()
	const group = "versions.example.com"
	name := "crontabs." + group
	crd := crontabs(group)
	v2 := *crd.Spec.Versions[0].DeepCopy()
	v2.Name, v2.Storage = "v2", false
	crd.Spec.Versions[0].Deprecated = true
	crd.Spec.Versions = append(crd.Spec.Versions, v2)
	if _, err := createCRD(t, ctx, crd); err != nil {
		t.Fatal(err)
	}
	defer deleteCRD(t, ctx, name)
	waitCRD(t, ctx, name, established)
	dc := dynamic.NewForConfigOrDie(config(t))
	v1c := dc.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "crontabs"}).Namespace("default")
	v2c := dc.Resource(schema.GroupVersionResource{Group: group, Version: "v2", Resource: "crontabs"}).Namespace("default")
	obj := crontab(group, "shared", nil)
	obj.SetAPIVersion(group + "/v2")
	var err error
	for range 200 {
		if _, err = v2c.Create(ctx, obj, metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("create through v2: %v", err)
	}
	got, err := v1c.Get(ctx, "shared", metav1.GetOptions{})
	if err != nil || got.GetAPIVersion() != group+"/v1" {
		t.Fatalf("get through v1: %v %v", got, err)
	}
	_, _, hdr := raw(t, "GET", "/apis/"+group+"/v1/namespaces/default/crontabs/shared", "", "application/json", nil)
	if want := group + "/v1 CronTab is deprecated; use " + group + "/v2 CronTab"; !strings.Contains(hdr.Get("Warning"), want) {
		t.Errorf("deprecated version's Warning %q, want %q", hdr.Get("Warning"), want)
	}
	kv, err := shared.EtcdClient().Get(ctx, "/registry/"+group+"/crontabs/default/shared")
	if err != nil || len(kv.Kvs) != 1 || !strings.Contains(string(kv.Kvs[0].Value), `"apiVersion":"`+group+`/v1"`) {
		t.Errorf("etcd holds %v (%v), want the storage version v1", kv, err)
	}
	dl, err := discovery.NewDiscoveryClientForConfigOrDie(config(t)).ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range dl.Groups {
		if g.Name == group && g.PreferredVersion.Version != "v2" {
			t.Errorf("preferred version %s, want v2 (the highest, not the storage version)", g.PreferredVersion.Version)
		}
	}

	// Make v2 the storage version: storedVersions keeps v1 and adds v2.
	cur, err := getCRD(t, ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Versions[0].Storage, cur.Spec.Versions[1].Storage = false, true
	updated := &apiextensionsv1.CustomResourceDefinition{}
	if err := crdClient(t).Put().Resource("customresourcedefinitions").Name(name).Body(cur).Do(ctx).Into(updated); err != nil {
		t.Fatalf("update storage version: %v", err)
	}
	if !slices.Equal(updated.Status.StoredVersions, []string{"v1", "v2"}) || updated.Generation != 2 {
		t.Errorf("storedVersions %v generation %d, want [v1 v2] and 2", updated.Status.StoredVersions, updated.Generation)
	}
	// The object written before stays v1 in etcd; the new storage
	// version reads it as v2, as every served version does.
	// (Ensure writes the same spec and waits until it is served.)
	if err := shared.CustomResources().Ensure(ctx, []*apiextensionsv1.CustomResourceDefinition{updated}); err != nil {
		t.Fatal(err)
	}
	if got, err = v2c.Get(ctx, "shared", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if got.GetAPIVersion() != group+"/v2" {
		t.Errorf("an object stored as v1 read through the storage version v2 as %s", got.GetAPIVersion())
	}
}

// TestNamespaceDeletionRemovesCustomResources deletes a namespace that
// holds a custom resource: it goes with the namespace.
func TestNamespaceDeletionRemovesCustomResources(t *testing.T) {
	ctx, cancel := contextWithTimeout(t, 60*time.Second)
	defer cancel()
	const group = "nsdelete.example.com"
	if _, err := createCRD(t, ctx, crontabs(group)); err != nil {
		t.Fatal(err)
	}
	defer deleteCRD(t, ctx, "crontabs."+group)
	waitCRD(t, ctx, "crontabs."+group, established)
	cs := clientset(t)
	ns := "crd-ns-delete"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, namespaceObject(ns), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(config(t)).Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "crontabs"}).Namespace(ns)
	var err error
	for range 200 {
		if _, err = dyn.Create(ctx, crontab(group, "c", nil), metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatal("namespace with a custom resource not deleted")
	}
	if kv, _ := shared.EtcdClient().Get(ctx, "/registry/"+group+"/crontabs/"+ns+"/", clientv3WithPrefix()...); kv != nil && len(kv.Kvs) > 0 {
		t.Errorf("custom resource left in the deleted namespace")
	}
}

// TestCustomResourceSelectableFieldsAndReadDefaults selects custom
// resources by a declared selectableField (and refuses an undeclared
// one with upstream's 400), then adds a default to the schema: objects
// stored before show it on read without being rewritten.
func TestCustomResourceSelectableFieldsAndReadDefaults(t *testing.T) {
	ctx, cancel := contextWithTimeout(t, 60*time.Second)
	defer cancel()
	const group = "select.example.com"
	name := "crontabs." + group
	crd := crontabs(group)
	crd.Spec.Versions[0].SelectableFields = []apiextensionsv1.SelectableField{{JSONPath: ".spec.image"}}
	if _, err := createCRD(t, ctx, crd); err != nil {
		t.Fatal(err)
	}
	defer deleteCRD(t, ctx, name)
	waitCRD(t, ctx, name, established)
	dyn := dynamic.NewForConfigOrDie(config(t)).Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "crontabs"}).Namespace("default")
	for i, image := range []string{"a", "b", "a"} {
		obj := crontab(group, fmt.Sprintf("c%d", i), nil)
		unstructured.SetNestedField(obj.Object, image, "spec", "image")
		var err error
		for range 200 {
			if _, err = dyn.Create(ctx, obj, metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	list, err := dyn.List(ctx, metav1.ListOptions{FieldSelector: "spec.image=a"})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("select spec.image=a: %v items, %v; want 2", len(list.Items), err)
	}
	_, err = dyn.List(ctx, metav1.ListOptions{FieldSelector: "spec.cronSpec=x"})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "field label not supported: spec.cronSpec") {
		t.Errorf("select on an undeclared field: %v, want 400", err)
	}

	cur, err := getCRD(t, ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	spec := cur.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	policy := spec.Properties["policy"]
	policy.Default = &apiextensionsv1.JSON{Raw: []byte(`"Allow"`)}
	spec.Properties["policy"] = policy
	cur.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	if err := crdClient(t).Put().Resource("customresourcedefinitions").Name(name).Body(cur).Do(ctx).Error(); err != nil {
		t.Fatalf("add a default: %v", err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := dyn.Get(ctx, "c0", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		p, _, _ := unstructured.NestedString(got.Object, "spec", "policy")
		return p == "Allow", nil
	}); err != nil {
		t.Error("the new default does not show on read")
	}
	kv, _ := shared.EtcdClient().Get(ctx, "/registry/"+group+"/crontabs/default/c0")
	if len(kv.Kvs) == 1 && strings.Contains(string(kv.Kvs[0].Value), "policy") {
		t.Errorf("etcd was rewritten: %s", kv.Kvs[0].Value)
	}
}

// TestDeletingACRDThatServesNoVersionRemovesItsObjects deletes a CRD whose
// only version was unserved after objects were written: no client can
// reach them, and they are deleted from etcd all the same (upstream's
// finalizer goes through the storage version's storage), so a CRD created
// again with the name does not bring them back.
func TestDeletingACRDThatServesNoVersionRemovesItsObjects(t *testing.T) {
	ctx, cancel := contextWithTimeout(t, 60*time.Second)
	defer cancel()
	const group = "unserved.example.com"
	name := "crontabs." + group
	if _, err := createCRD(t, ctx, crontabs(group)); err != nil {
		t.Fatal(err)
	}
	defer deleteCRD(t, ctx, name)
	waitCRD(t, ctx, name, established)
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "crontabs"}
	dyn := dynamic.NewForConfigOrDie(config(t)).Resource(gvr)
	for _, ns := range []string{"default", "kube-public"} {
		var err error
		for range 200 { // served within a moment of Established
			if _, err = dyn.Namespace(ns).Create(ctx, crontab(group, "old", nil), metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("create in %s: %v", ns, err)
		}
	}
	prefix := "/registry/" + group + "/crontabs/"
	if kv, err := shared.EtcdClient().Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || kv.Count != 2 {
		t.Fatalf("etcd holds %v objects (%v), want 2", kv, err)
	}

	cur, err := getCRD(t, ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Versions[0].Served = false
	if err := crdClient(t).Put().Resource("customresourcedefinitions").Name(name).Body(cur).Do(ctx).Error(); err != nil {
		t.Fatalf("unserve v1: %v", err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Namespace("default").Get(ctx, "old", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatal("unserved version still served")
	}

	deleteCRD(t, ctx, name)
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := getCRD(t, ctx, name)
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatal("CRD still there")
	}
	if kv, err := shared.EtcdClient().Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || kv.Count != 0 {
		t.Errorf("after the CRD's deletion etcd holds %v of its objects (%v), want none", kv.Count, err)
	}
}
