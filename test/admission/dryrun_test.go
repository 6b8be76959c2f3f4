package admission_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

var dryRunAll = []string{metav1.DryRunAll}

// dryRunSample is a valid object of one built-in kind, with the field a
// server-side default fills (path, value), to show that the dry-run answer
// is the defaulted object.
type dryRunSample struct {
	gvr        schema.GroupVersionResource
	namespaced bool
	object     string
	defaulted  []string // path to a field the server defaults
	want       any      // its default
}

func dryRunSamples(ns string) []dryRunSample {
	now := metav1.NewMicroTime(time.Now()).UTC().Format("2006-01-02T15:04:05.000000Z")
	podSpec := `{"containers":[{"name":"c","image":"busybox:1.36"}]}`
	template := `{"metadata":{"labels":{"app":"d"}},"spec":` + podSpec + `}`
	gvr := func(g, v, r string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: g, Version: v, Resource: r}
	}
	return []dryRunSample{
		{gvr("", "v1", "pods"), true, `{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"p-"},"spec":` + podSpec + `}`, []string{"spec", "restartPolicy"}, "Always"},
		{gvr("", "v1", "configmaps"), true, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"k":"v"}}`, nil, nil},
		{gvr("", "v1", "secrets"), true, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"stringData":{"k":"v"}}`, []string{"type"}, "Opaque"},
		{gvr("", "v1", "services"), true, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"svc"},"spec":{"ports":[{"port":80}]}}`, []string{"spec", "type"}, "ClusterIP"},
		{gvr("", "v1", "serviceaccounts"), true, `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"sa"}}`, nil, nil},
		{gvr("", "v1", "events"), true, `{"apiVersion":"v1","kind":"Event","metadata":{"name":"ev"},"involvedObject":{"kind":"Pod","name":"x","namespace":"` + ns + `"},"reason":"R","message":"m","type":"Normal","source":{"component":"test"}}`, nil, nil},
		{gvr("events.k8s.io", "v1", "events"), true, `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"ev2"},"eventTime":"` + now + `","reportingController":"test","reportingInstance":"test-1","action":"A","reason":"R","type":"Normal","regarding":{"kind":"Pod","name":"x","namespace":"` + ns + `"}}`, nil, nil},
		{gvr("coordination.k8s.io", "v1", "leases"), true, `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"},"spec":{"holderIdentity":"me"}}`, nil, nil},
		{gvr("apps", "v1", "deployments"), true, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"app":"d"}},"template":` + template + `}}`, []string{"spec", "replicas"}, int64(1)},
		{gvr("apps", "v1", "replicasets"), true, `{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"rs"},"spec":{"selector":{"matchLabels":{"app":"d"}},"template":` + template + `}}`, []string{"spec", "replicas"}, int64(1)},
		{gvr("apps", "v1", "controllerrevisions"), true, `{"apiVersion":"apps/v1","kind":"ControllerRevision","metadata":{"name":"cr"},"data":{},"revision":1}`, nil, nil},
		{gvr("batch", "v1", "jobs"), true, `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox:1.36"}]}}}}`, []string{"spec", "backoffLimit"}, int64(6)},
		{gvr("batch", "v1", "cronjobs"), true, `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"cj"},"spec":{"schedule":"*/5 * * * *","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox:1.36"}]}}}}}}`, []string{"spec", "concurrencyPolicy"}, "Allow"},
		{gvr("", "v1", "nodes"), false, `{"apiVersion":"v1","kind":"Node","metadata":{"generateName":"dry-node-"}}`, nil, nil},
		{gvr("", "v1", "namespaces"), false, `{"apiVersion":"v1","kind":"Namespace","metadata":{"generateName":"dry-ns-"}}`, []string{"status", "phase"}, "Active"},
	}
}

// TestDryRunChangesNothingForEveryBuiltinKind runs create, update, merge
// patch, server-side apply, delete and deletecollection with dryRun=All
// on one object of every built-in kind: each answers the object that
// would have been stored (generated name, defaults, uid,
// creationTimestamp), and nothing is written: a list after equals the
// list before, and a watch from before sees only the test's own real
// writes.
func TestDryRunChangesNothingForEveryBuiltinKind(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	dyn := dynamic.NewForConfigOrDie(config(t))
	ns := newNamespace(t, client)
	for _, tt := range dryRunSamples(ns) {
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
			before, err := rc.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			w, err := rc.Watch(ctx, metav1.ListOptions{ResourceVersion: before.GetResourceVersion()})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()

			// create
			dry, err := rc.Create(ctx, obj.DeepCopy(), metav1.CreateOptions{DryRun: dryRunAll})
			if err != nil {
				t.Fatalf("dry-run create: %v", err)
			}
			if ts := dry.GetCreationTimestamp(); dry.GetName() == "" || dry.GetUID() == "" || ts.IsZero() || dry.GetResourceVersion() != "" {
				t.Errorf("dry-run create answered name %q uid %q creationTimestamp %v resourceVersion %q; want a name, a uid, a timestamp and no resourceVersion",
					dry.GetName(), dry.GetUID(), dry.GetCreationTimestamp(), dry.GetResourceVersion())
			}
			if tt.defaulted != nil {
				got, _, _ := unstructured.NestedFieldNoCopy(dry.Object, tt.defaulted...)
				if fmt.Sprint(got) != fmt.Sprint(tt.want) {
					t.Errorf("dry-run create: %s = %v, want the default %v", strings.Join(tt.defaulted, "."), got, tt.want)
				}
			}
			if _, err := rc.Get(ctx, dry.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("get after dry-run create: %v, want NotFound", err)
			}

			// A real object for the other verbs.
			real, err := rc.Create(ctx, obj.DeepCopy(), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			name := real.GetName()
			again := obj.DeepCopy()
			again.SetName(name)
			if _, err := rc.Create(ctx, again, metav1.CreateOptions{DryRun: dryRunAll}); !apierrors.IsAlreadyExists(err) {
				t.Errorf("dry-run create of an existing object: %v, want AlreadyExists", err)
			}

			// update
			upd := real.DeepCopy()
			upd.SetLabels(withLabel(real.GetLabels(), "dry", "update"))
			out, err := rc.Update(ctx, upd, metav1.UpdateOptions{DryRun: dryRunAll})
			if err != nil {
				t.Fatalf("dry-run update: %v", err)
			}
			if out.GetLabels()["dry"] != "update" || out.GetResourceVersion() != real.GetResourceVersion() {
				t.Errorf("dry-run update answered labels %v resourceVersion %q, want dry=update and %q", out.GetLabels(), out.GetResourceVersion(), real.GetResourceVersion())
			}
			// merge patch
			out, err = rc.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"labels":{"dry":"patch"}}}`), metav1.PatchOptions{DryRun: dryRunAll})
			if err != nil || out.GetLabels()["dry"] != "patch" {
				t.Fatalf("dry-run patch: %v (labels %v)", err, out)
			}
			// server-side apply
			apply := fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":%q,"labels":{"dry":"apply"}}}`, real.GetAPIVersion(), real.GetKind(), name)
			out, err = rc.Patch(ctx, name, types.ApplyPatchType, []byte(apply), metav1.PatchOptions{DryRun: dryRunAll, FieldManager: "dry-test"})
			if err != nil || out.GetLabels()["dry"] != "apply" {
				t.Fatalf("dry-run apply: %v (%v)", err, out)
			}
			// delete and deletecollection
			if err := rc.Delete(ctx, name, metav1.DeleteOptions{DryRun: dryRunAll}); err != nil {
				t.Fatalf("dry-run delete: %v", err)
			}
			if tt.namespaced {
				if err := rc.DeleteCollection(ctx, metav1.DeleteOptions{DryRun: dryRunAll}, metav1.ListOptions{}); err != nil {
					t.Fatalf("dry-run deletecollection: %v", err)
				}
			}
			got, err := rc.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get after the dry runs: %v", err)
			}
			if got.GetResourceVersion() != real.GetResourceVersion() || got.GetLabels()["dry"] != "" || got.GetDeletionTimestamp() != nil {
				t.Errorf("the dry runs changed the object: resourceVersion %s→%s, labels %v, deletionTimestamp %v",
					real.GetResourceVersion(), got.GetResourceVersion(), got.GetLabels(), got.GetDeletionTimestamp())
			}

			// A real write as a sentinel: the watch sees the real create
			// and then it, nothing of the dry runs in between.
			if _, err := rc.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"labels":{"sentinel":"yes"}}}`), metav1.PatchOptions{}); err != nil {
				t.Fatalf("sentinel patch: %v", err)
			}
			var events []string
			for len(events) < 2 {
				select {
				case ev := <-w.ResultChan():
					u, _ := ev.Object.(*unstructured.Unstructured)
					if u == nil || u.GetName() != name {
						events = append(events, fmt.Sprintf("%s of another object %v", ev.Type, ev.Object))
						continue
					}
					events = append(events, fmt.Sprintf("%s sentinel=%s", ev.Type, u.GetLabels()["sentinel"]))
				case <-time.After(20 * time.Second):
					t.Fatalf("watch: got %v, waited for 2 events", events)
				}
			}
			if want := []string{string(watch.Added) + " sentinel=", string(watch.Modified) + " sentinel=yes"}; !slices.Equal(events, want) {
				t.Errorf("watch saw %q, want %q", events, want)
			}
			after, err := rc.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(after.Items) != len(before.Items)+1 {
				t.Errorf("list has %d items after, %d before: want only the real object more", len(after.Items), len(before.Items))
			}
		})
	}
}

// TestDryRunSubresources: status, scale and binding take dryRun=All and
// write nothing.
func TestDryRunSubresources(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ctx := t.Context()
	ns := newNamespace(t, client)
	dyn := dynamic.NewForConfigOrDie(config(t))
	pods := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace(ns)
	pod := &unstructured.Unstructured{}
	_ = json.Unmarshal([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"busybox:1.36"}]}}`), &pod.Object)
	pod, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := pods.Patch(ctx, "p", types.MergePatchType, []byte(`{"status":{"message":"dry"}}`), metav1.PatchOptions{DryRun: dryRunAll}, "status")
	if err != nil || out.Object["status"].(map[string]any)["message"] != "dry" {
		t.Fatalf("dry-run status patch: %v", err)
	}
	body := `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p"},"target":{"kind":"Node","name":"n1"}}`
	res := client.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name("p").SubResource("binding").Param("dryRun", "All").Body([]byte(body)).SetHeader("Content-Type", "application/json").Do(ctx)
	if err := res.Error(); err != nil {
		t.Fatalf("dry-run binding: %v", err)
	}

	d := dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace(ns)
	dep := &unstructured.Unstructured{}
	_ = json.Unmarshal([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"busybox:1.36"}]}}}}`), &dep.Object)
	dep, err = d.Create(ctx, dep, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale, err := d.Patch(ctx, "d", types.MergePatchType, []byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{DryRun: dryRunAll}, "scale")
	if err != nil {
		t.Fatalf("dry-run scale: %v", err)
	}
	if r, _, _ := unstructured.NestedInt64(scale.Object, "spec", "replicas"); r != 5 || scale.GetKind() != "Scale" {
		t.Errorf("dry-run scale answered %s replicas %d, want a Scale of 5", scale.GetKind(), r)
	}

	gotPod, err := pods.Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if gotPod.GetResourceVersion() != pod.GetResourceVersion() {
		t.Errorf("dry-run status or binding wrote the pod: resourceVersion %s→%s (%v)", pod.GetResourceVersion(), gotPod.GetResourceVersion(), gotPod.Object["spec"])
	}
	gotDep, err := d.Get(ctx, "d", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if gotDep.GetResourceVersion() != dep.GetResourceVersion() {
		t.Errorf("dry-run scale wrote the deployment: resourceVersion %s→%s", dep.GetResourceVersion(), gotDep.GetResourceVersion())
	}
}

// TestDryRunOfAnyServedKindWritesNothing covers the kinds the sample
// table does not know (those added later): a dry-run create of a bare
// object of every creatable resource in discovery may succeed or be
// refused, but the object never appears.
func TestDryRunOfAnyServedKindWritesNothing(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	dyn := dynamic.NewForConfigOrDie(config(t))
	ns := newNamespace(t, client)
	known := map[schema.GroupVersionResource]bool{}
	for _, s := range dryRunSamples(ns) {
		known[s.gvr] = true
	}
	_, lists, err := discovery.NewDiscoveryClientForConfigOrDie(config(t)).ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lists {
		gv, _ := schema.ParseGroupVersion(l.GroupVersion)
		for _, r := range l.APIResources {
			gvr := gv.WithResource(r.Name)
			if strings.Contains(r.Name, "/") || known[gvr] || !slices.Contains(r.Verbs, "create") || !slices.Contains(r.Verbs, "get") {
				continue
			}
			t.Run(gvr.String(), func(t *testing.T) {
				var rc dynamic.ResourceInterface = dyn.Resource(gvr)
				if r.Namespaced {
					rc = dyn.Resource(gvr).Namespace(ns)
				}
				obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gv.String(), "kind": r.Kind, "metadata": map[string]any{"name": "dry-bare"}}}
				_, err := rc.Create(t.Context(), obj, metav1.CreateOptions{DryRun: dryRunAll})
				if status, ok := err.(apierrors.APIStatus); err != nil && (!ok || status.Status().Code >= http.StatusInternalServerError) {
					t.Errorf("dry-run create: %v", err)
				}
				if _, err := rc.Get(t.Context(), "dry-bare", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("get after dry-run create: %v, want NotFound", err)
				}
			})
		}
	}
}

// TestUnknownDryRunValueIsRefused: a dryRun other than All is upstream's
// 422 on every write verb.
func TestUnknownDryRunValueIsRefused(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := newNamespace(t, client)
	rc := client.CoreV1().RESTClient()
	cm := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}`)
	if _, err := client.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1ConfigMap, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		verb string
		path string
		body []byte
		ct   string
	}{
		{"create", http.MethodPost, "configmaps", cm, "application/json"},
		{"update", http.MethodPut, "configmaps/cm", cm, "application/json"},
		{"patch", http.MethodPatch, "configmaps/cm", []byte(`{}`), "application/merge-patch+json"},
		{"delete", http.MethodDelete, "configmaps/cm", nil, ""},
		{"deletecollection", http.MethodDelete, "configmaps", nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := rc.Verb(tt.verb).AbsPath("/api/v1/namespaces", ns, tt.path).Param("dryRun", "Sometimes")
			if tt.body != nil {
				req = req.Body(tt.body).SetHeader("Content-Type", tt.ct)
			}
			var code int
			err := req.Do(t.Context()).StatusCode(&code).Error()
			if code != http.StatusUnprocessableEntity || !strings.Contains(err.Error(), `dryRun: Unsupported value: ["Sometimes"]`) {
				t.Errorf("dryRun=Sometimes: %d %v, want 422 Unsupported value", code, err)
			}
		})
	}
	if _, err := client.CoreV1().ConfigMaps(ns).Get(t.Context(), "cm", metav1.GetOptions{}); err != nil {
		t.Errorf("the refused requests changed the configMap: %v", err)
	}
}

var corev1ConfigMap = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}

// withLabel returns a copy of labels with key set to value.
func withLabel(labels map[string]string, key, value string) map[string]string {
	out := map[string]string{key: value}
	for k, v := range labels {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// TestKubectlServerDryRun: kubectl apply (client-side and server-side)
// and kubectl delete with --dry-run=server say what they would do and
// change nothing.
func TestKubectlServerDryRun(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ctx := t.Context()
	ns := newNamespace(t, client)
	manifest := func(value string) string {
		return `apiVersion: v1
kind: ConfigMap
metadata:
  name: kc
data:
  k: "` + value + `"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: kd
spec:
  replicas: 2
  selector:
    matchLabels: {app: kd}
  template:
    metadata:
      labels: {app: kd}
    spec:
      containers:
      - name: c
        image: busybox:` + value + `
`
	}
	run := func(stdin string, want []string, args ...string) {
		t.Helper()
		out, err := kubectl(t, stdin, append([]string{"-n", ns}, args...)...)
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("kubectl %v said %q, want %q in it", args, out, w)
			}
		}
	}
	run(manifest("1"), []string{"configmap/kc created (server dry run)", "deployment.apps/kd created (server dry run)"}, "apply", "--dry-run=server", "-f", "-")
	if cms, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil || len(cms.Items) != 0 {
		t.Fatalf("after a dry-run apply: %v, %d configMaps", err, len(cms.Items))
	}
	if ds, err := client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{}); err != nil || len(ds.Items) != 0 {
		t.Fatalf("after a dry-run apply: %v, %d deployments", err, len(ds.Items))
	}
	run(manifest("1"), []string{"configmap/kc created", "deployment.apps/kd created"}, "apply", "-f", "-")
	cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "kc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	run(manifest("2"), []string{"configmap/kc configured (server dry run)"}, "apply", "--dry-run=server", "-f", "-")
	run(manifest("2"), []string{"configmap/kc serverside-applied (server dry run)"}, "apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", "-")
	run("", []string{`configmap "kc" deleted (server dry run)`}, "delete", "--dry-run=server", "configmap", "kc")
	run("", []string{`deployment.apps "kd" deleted (server dry run)`}, "delete", "--dry-run=server", "--all", "deployments")
	after, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "kc", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("configMap after dry runs: %v", err)
	}
	if after.ResourceVersion != cm.ResourceVersion || after.Data["k"] != "1" {
		t.Errorf("the dry runs changed the configMap: resourceVersion %s→%s, data %v", cm.ResourceVersion, after.ResourceVersion, after.Data)
	}
	if _, err := client.AppsV1().Deployments(ns).Get(ctx, "kd", metav1.GetOptions{}); err != nil {
		t.Errorf("deployment after a dry-run delete: %v", err)
	}
}

// TestDryRunOnAStreamIsABadRequest: exec, attach, portforward and proxy
// refuse dryRun with upstream's 400.
func TestDryRunOnAStreamIsABadRequest(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := newNamespace(t, client)
	var code int
	err := client.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name("p").SubResource("exec").
		Param("dryRun", "All").Param("command", "true").Do(t.Context()).StatusCode(&code).Error()
	if code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(err), "dryRun is not supported") {
		t.Errorf("exec with dryRun: %d %v, want 400 dryRun is not supported", code, err)
	}
}
