package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/yaml"

	"github.com/kite-project/kite"
)

// TestEveryResourceWithTheDynamicClient creates, gets, lists, patches and
// deletes one object of every served resource through the dynamic client.
func TestEveryResourceWithTheDynamicClient(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	dyn := dynamic.NewForConfigOrDie(config(t))
	ns := newNamespace(t, client)
	now := metav1.NewMicroTime(time.Now()).UTC().Format("2006-01-02T15:04:05.000000Z")
	tests := []struct {
		gvr        schema.GroupVersionResource
		namespaced bool
		object     string
	}{
		{schema.GroupVersionResource{Version: "v1", Resource: "pods"}, true, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containers":[{"name":"c","image":"i"}]}}`},
		{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, true, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"k":"v"}}`},
		{schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, true, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"},"stringData":{"k":"v"}}`},
		{schema.GroupVersionResource{Version: "v1", Resource: "services"}, true, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"x"},"spec":{"ports":[{"port":80}]}}`},
		{schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, true, `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"x"}}`},
		{schema.GroupVersionResource{Version: "v1", Resource: "events"}, true, `{"apiVersion":"v1","kind":"Event","metadata":{"name":"x"},"involvedObject":{"kind":"Pod","name":"x","namespace":"` + ns + `"},"reason":"Test","message":"m","type":"Normal","source":{"component":"test"}}`},
		{schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}, true, `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"y"},"eventTime":"` + now + `","reportingController":"test","reportingInstance":"test-1","action":"Testing","reason":"Test","type":"Normal","regarding":{"kind":"Pod","name":"x","namespace":"` + ns + `"}}`},
		{schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}, true, `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"x"},"spec":{"holderIdentity":"me","leaseDurationSeconds":40}}`},
		{schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, false, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"dyn-node"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.gvr.String(), func(t *testing.T) {
			ctx := t.Context()
			obj := &unstructured.Unstructured{}
			if err := json.Unmarshal([]byte(tt.object), &obj.Object); err != nil {
				t.Fatal(err)
			}
			var rc dynamic.ResourceInterface = dyn.Resource(tt.gvr)
			if tt.namespaced {
				rc = dyn.Resource(tt.gvr).Namespace(ns)
			}
			created, err := rc.Create(ctx, obj, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			name := created.GetName()
			if _, err := rc.Get(ctx, name, metav1.GetOptions{}); err != nil {
				t.Fatalf("get: %v", err)
			}
			list, err := rc.List(ctx, metav1.ListOptions{})
			if err != nil || len(list.Items) == 0 {
				t.Fatalf("list: %v (%d items)", err, len(list.Items))
			}
			patched, err := rc.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"labels":{"patched":"yes"}}}`), metav1.PatchOptions{})
			if err != nil || patched.GetLabels()["patched"] != "yes" {
				t.Fatalf("patch: %v", err)
			}
			if err := rc.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if _, err := rc.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("get after delete: %v, want NotFound", err)
			}
		})
	}
}

// TestProtobufAndYAMLBodies writes with protobuf and with YAML bodies and
// reads back in each.
func TestProtobufAndYAMLBodies(t *testing.T) {
	cfg := config(t)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf"
	pb := kubernetes.NewForConfigOrDie(cfg)
	ns := newNamespace(t, pb)
	created, err := pb.CoreV1().Pods(ns).Create(t.Context(), testPod("proto"), metav1.CreateOptions{})
	if err != nil || created.UID == "" {
		t.Fatalf("protobuf create: %v", err)
	}
	list, err := pb.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("protobuf list: %v", err)
	}

	body, _ := yaml.Marshal(testPod("yaml"))
	code, _, _ := raw(t, "POST", "/api/v1/namespaces/"+ns+"/pods", "application/yaml", "application/yaml", append([]byte("apiVersion: v1\nkind: Pod\n"), body...))
	if code != 201 {
		t.Fatalf("YAML create: %d", code)
	}
}

func TestServerSideApplyConflictsAndForce(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ctx := t.Context()
	ns := newNamespace(t, client)
	cms := client.CoreV1().ConfigMaps(ns)
	apply := func(manager string, value string, force bool) error {
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg"},"data":{"key":%q}}`, value)
		_, err := cms.Patch(ctx, "cfg", types.ApplyPatchType, []byte(body), metav1.PatchOptions{FieldManager: manager, Force: &force})
		return err
	}
	if err := apply("alice", "a", false); err != nil {
		t.Fatalf("first apply (creates): %v", err)
	}
	if err := apply("alice", "a2", false); err != nil {
		t.Fatalf("same manager re-applies: %v", err)
	}
	err := apply("bob", "b", false)
	if !apierrors.IsConflict(err) {
		t.Fatalf("other manager without force: got %v, want Conflict", err)
	}
	if !strings.Contains(err.Error(), "alice") {
		t.Errorf("conflict does not name the owner: %v", err)
	}
	if err := apply("bob", "b", true); err != nil {
		t.Fatalf("force apply: %v", err)
	}
	cm, err := cms.Get(ctx, "cfg", metav1.GetOptions{})
	if err != nil || cm.Data["key"] != "b" {
		t.Fatalf("after force: %v, data %v", err, cm.Data)
	}
	owners := map[string]bool{}
	for _, mf := range cm.ManagedFields {
		owners[mf.Manager] = true
	}
	if !owners["bob"] {
		t.Errorf("managedFields %v lack bob", cm.ManagedFields)
	}
}

// TestWatchFromCompactedRevisionIsGone compacts etcd past a list's
// resourceVersion: a watch from it ends with 410 Expired, and the client
// re-lists. It reads etcd directly (no watch cache, whose window of
// events outlives etcd's compaction as upstream's does), so it runs its
// own server.
func TestWatchFromCompactedRevisionIsGone(t *testing.T) {
	srv, err := kite.Start(t.Context(), kite.Options{DataDir: t.TempDir(), EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal", DisableWatchCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	client := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ctx := t.Context()
	ns := newNamespace(t, client)
	cms := client.CoreV1().ConfigMaps(ns)
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var last *v1.ConfigMap
	for i := range 3 {
		if last, err = cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("c", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rev, _ := strconv.ParseInt(last.ResourceVersion, 10, 64)
	if _, err := srv.EtcdClient().Compact(ctx, rev); err != nil {
		t.Fatalf("compact: %v", err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			t.Fatalf("watch from a compacted RV: %v, want 410", err)
		}
		return
	}
	defer w.Stop()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	select {
	case ev := <-w.ResultChan():
		status, ok := ev.Object.(*metav1.Status)
		if ev.Type != watch.Error || !ok || status.Code != 410 || status.Reason != metav1.StatusReasonExpired {
			t.Fatalf("first event %s %#v, want ERROR 410 Expired", ev.Type, ev.Object)
		}
	case <-wctx.Done():
		t.Fatal("no event from a watch at a compacted revision")
	}
	_, err = cms.List(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Errorf("exact list at a compacted RV: %v, want 410", err)
	}
}

// TestMetadataOnlyClient uses client-go's metadata client, which asks for
// PartialObjectMetadata(List) in get, list and watch.
func TestMetadataOnlyClient(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ctx := t.Context()
	ns := newNamespace(t, client)
	if _, err := client.CoreV1().Pods(ns).Create(ctx, testPod("m"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mc := metadata.NewForConfigOrDie(config(t)).Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace(ns)
	got, err := mc.Get(ctx, "m", metav1.GetOptions{})
	if err != nil || got.Name != "m" || got.Labels["app"] != "web" {
		t.Fatalf("metadata get: %v %+v", err, got)
	}
	list, err := mc.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.ResourceVersion == "" {
		t.Fatalf("metadata list: %v %+v", err, list)
	}
	w, err := mc.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := client.CoreV1().Pods(ns).Delete(ctx, "m", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		p, ok := ev.Object.(*metav1.PartialObjectMetadata)
		if ev.Type != watch.Deleted || !ok || p.Name != "m" {
			t.Fatalf("metadata watch event %s %#v", ev.Type, ev.Object)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no metadata watch event")
	}
}

// TestUnknownFieldsWarnByDefault: without fieldValidation, unknown fields
// are dropped with a Warning header, as upstream's default (Warn).
func TestUnknownFieldsWarnByDefault(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := newNamespace(t, client)
	body := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w"},"bogus":1}`)
	code, _, hdr := raw(t, "POST", "/api/v1/namespaces/"+ns+"/configmaps", "application/json", "", body)
	if code != 201 || !strings.Contains(hdr.Get("Warning"), `unknown field \"bogus\"`) {
		t.Fatalf("got %d, Warning %q", code, hdr.Get("Warning"))
	}
	body = []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"i"},"bogus":1}`)
	code, _, hdr = raw(t, "POST", "/api/v1/namespaces/"+ns+"/configmaps?fieldValidation=Ignore", "application/json", "", body)
	if code != 201 || hdr.Get("Warning") != "" {
		t.Fatalf("Ignore: got %d, Warning %q", code, hdr.Get("Warning"))
	}
}

// TestEventsAreOneResourceThroughBothAPIs: an event written through
// events.k8s.io/v1 is a core/v1 event and back, as upstream.
func TestEventsAreOneResourceThroughBothAPIs(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ctx := t.Context()
	ns := newNamespace(t, client)
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "e1"},
		EventTime:           metav1.NewMicroTime(time.Now()),
		ReportingController: "test", ReportingInstance: "test-1", Action: "Testing", Reason: "Tested",
		Type: "Normal", Note: "hello", Regarding: v1.ObjectReference{Kind: "Pod", Name: "p", Namespace: ns},
	}
	if _, err := client.EventsV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create through events.k8s.io: %v", err)
	}
	core, err := client.CoreV1().Events(ns).Get(ctx, "e1", metav1.GetOptions{})
	if err != nil || core.Message != "hello" || core.InvolvedObject.Name != "p" || core.ReportingController != "test" {
		t.Fatalf("read through core/v1: %v %+v", err, core)
	}
	core.Message = "changed"
	if _, err := client.CoreV1().Events(ns).Update(ctx, core, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	back, err := client.EventsV1().Events(ns).Get(ctx, "e1", metav1.GetOptions{})
	if err != nil || back.Note != "changed" {
		t.Fatalf("read back through events.k8s.io: %v %+v", err, back)
	}
	list, err := client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=p"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list by regarding.name: %v, %d", err, len(list.Items))
	}
	if err := client.EventsV1().Events(ns).Delete(ctx, "e1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Events(ns).Get(ctx, "e1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after delete through events.k8s.io: %v", err)
	}
}
