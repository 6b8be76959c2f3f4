package api_test

import (
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
)

// TestCustomResourceInformersAndMetadata runs a dynamic informer and a
// metadata-only list over a custom resource, and writes spec and status
// through their own endpoints: the informer sees the create and both
// updates, status writes leave spec and generation alone, spec writes
// leave status alone and bump generation.
func TestCustomResourceInformersAndMetadata(t *testing.T) {
	ctx, cancel := contextWithTimeout(t, 60*time.Second)
	defer cancel()
	const group = "informers.example.com"
	if _, err := createCRD(t, ctx, crontabs(group)); err != nil {
		t.Fatal(err)
	}
	defer deleteCRD(t, ctx, "crontabs."+group)
	waitCRD(t, ctx, "crontabs."+group, established)
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "crontabs"}
	dc := dynamic.NewForConfigOrDie(config(t))
	cr := dc.Resource(gvr).Namespace("default")
	var err error
	var obj *unstructured.Unstructured
	for range 200 {
		if obj, err = cr.Create(ctx, crontab(group, "watched", nil), metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}

	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dc, 0, "default", nil)
	informer := factory.ForResource(gvr).Informer()
	events := make(chan string, 16)
	informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { events <- "add" },
		UpdateFunc: func(_, _ any) { events <- "update" },
	})
	stop := make(chan struct{})
	defer func() { close(stop); factory.Shutdown() }()
	factory.Start(stop)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("informer never synced")
	}

	unstructured.SetNestedField(obj.Object, true, "status", "ready")
	unstructured.SetNestedField(obj.Object, "ignored", "spec", "image")
	st, err := cr.UpdateStatus(ctx, obj, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	if img, _, _ := unstructured.NestedString(st.Object, "spec", "image"); img != "img" || st.GetGeneration() != 1 {
		t.Errorf("status write changed spec (%q) or generation (%d)", img, st.GetGeneration())
	}
	unstructured.SetNestedField(st.Object, "new", "spec", "image")
	unstructured.SetNestedField(st.Object, false, "status", "ready")
	up, err := cr.Update(ctx, st, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if ready, _, _ := unstructured.NestedBool(up.Object, "status", "ready"); !ready || up.GetGeneration() != 2 {
		t.Errorf("spec write: status.ready %v generation %d, want true and 2", ready, up.GetGeneration())
	}
	// A status write is checked against properties.status.
	bad := up.DeepCopy()
	unstructured.SetNestedField(bad.Object, "yes", "status", "ready")
	if _, err := cr.UpdateStatus(ctx, bad, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `status.ready: Invalid value: "string": ready in body must be of type boolean: "string"`) {
		t.Errorf("status write of the wrong type: %v", err)
	}
	want := []string{"add", "update", "update"}
	for i, w := range want {
		select {
		case got := <-events:
			if got != w {
				t.Errorf("event %d: %s, want %s", i, got, w)
			}
		case <-ctx.Done():
			t.Fatalf("informer saw %d of %d events", i, len(want))
		}
	}

	mc := metadata.NewForConfigOrDie(config(t))
	list, err := mc.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "watched" {
		t.Fatalf("metadata list: %+v %v", list, err)
	}
	one, err := mc.Resource(gvr).Namespace("default").Get(ctx, "watched", metav1.GetOptions{})
	if err != nil || one.UID != obj.GetUID() {
		t.Fatalf("metadata get: %+v %v", one, err)
	}
}

// TestCustomResourcesHaveNoProtobuf: custom resources are JSON and YAML
// only, as upstream (protobuf only for Tables and metadata): a protobuf
// Accept falls back to JSON when the client allows it, else 406, and a
// protobuf body is 415.
func TestCustomResourcesHaveNoProtobuf(t *testing.T) {
	ctx, cancel := contextWithTimeout(t, 30*time.Second)
	defer cancel()
	const group = "protobuf.example.com"
	if _, err := createCRD(t, ctx, crontabs(group)); err != nil {
		t.Fatal(err)
	}
	defer deleteCRD(t, ctx, "crontabs."+group)
	waitCRD(t, ctx, "crontabs."+group, established)
	path := "/apis/" + group + "/v1/namespaces/default/crontabs"
	var code int
	for range 200 {
		if code, _, _ = raw(t, "GET", path, "", "application/json", nil); code != 404 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, tc := range []struct {
		accept   string
		wantCode int
		wantType string
	}{
		{"application/vnd.kubernetes.protobuf, application/json", 200, "application/json"},
		{"application/vnd.kubernetes.protobuf", 406, ""},
		{"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", 200, "application/vnd.kubernetes.protobuf"},
	} {
		code, _, hdr := raw(t, "GET", path, "", tc.accept, nil)
		if code != tc.wantCode || (tc.wantType != "" && !strings.HasPrefix(hdr.Get("Content-Type"), tc.wantType)) {
			t.Errorf("Accept %s: %d %s, want %d %s", tc.accept, code, hdr.Get("Content-Type"), tc.wantCode, tc.wantType)
		}
	}
	if code, _, _ := raw(t, "POST", path, "application/vnd.kubernetes.protobuf", "application/json", []byte("k8s\x00")); code != 415 {
		t.Errorf("protobuf body: %d, want 415", code)
	}
}
