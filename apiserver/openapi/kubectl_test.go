package openapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kite-project/kite/apiserver/openapi"
)

const kubectl = "/usr/bin/kubectl"

var allVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

func servedResources() []openapi.Resource {
	return []openapi.Resource{
		{GVK: corev1.SchemeGroupVersion.WithKind("Pod"), Plural: "pods", Namespaced: true, Verbs: allVerbs,
			Object: &corev1.Pod{}, List: &corev1.PodList{},
			Subresources: []openapi.Subresource{{Name: "status", Verbs: []string{"get", "update", "patch"}}}},
		{GVK: corev1.SchemeGroupVersion.WithKind("Node"), Plural: "nodes", Verbs: allVerbs, Object: &corev1.Node{}, List: &corev1.NodeList{}},
		{GVK: corev1.SchemeGroupVersion.WithKind("Namespace"), Plural: "namespaces", Verbs: allVerbs, Object: &corev1.Namespace{}, List: &corev1.NamespaceList{}},
		{GVK: coordinationv1.SchemeGroupVersion.WithKind("Lease"), Plural: "leases", Namespaced: true, Verbs: allVerbs, Object: &coordinationv1.Lease{}, List: &coordinationv1.LeaseList{}},
	}
}

// fakeAPI is the smallest API server kubectl explain and apply accept:
// legacy discovery, the OpenAPI service under test, and pods kept in a
// map. It records the requests it saw.
type fakeAPI struct {
	mu       sync.Mutex
	pods     map[string][]byte // name -> JSON
	requests []string          // "METHOD path?query content-type accept=..."
}

func (f *fakeAPI) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

func (f *fakeAPI) handler(t *testing.T, oa http.Handler) http.Handler {
	mux := http.NewServeMux()
	writeJSON := func(w http.ResponseWriter, code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(v)
	}
	mux.Handle("/openapi/", oa)
	mux.Handle("/openapi/v2", oa)
	mux.Handle("/openapi/v3", oa)
	mux.HandleFunc("/version", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]string{"major": "1", "minor": "37", "gitVersion": "v1.37.2"})
	})
	mux.HandleFunc("/api", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}}})
	})
	mux.HandleFunc("/apis", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
			Groups: []metav1.APIGroup{{Name: "coordination.k8s.io",
				Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: "coordination.k8s.io/v1", Version: "v1"}},
				PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "coordination.k8s.io/v1", Version: "v1"}}}})
	})
	mux.HandleFunc("/api/v1", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1",
			APIResources: []metav1.APIResource{
				{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod", Verbs: allVerbs, ShortNames: []string{"po"}},
				{Name: "pods/status", Namespaced: true, Kind: "Pod", Verbs: []string{"get", "patch", "update"}},
				{Name: "nodes", SingularName: "node", Kind: "Node", Verbs: allVerbs, ShortNames: []string{"no"}},
				{Name: "namespaces", SingularName: "namespace", Kind: "Namespace", Verbs: allVerbs, ShortNames: []string{"ns"}},
			}})
	})
	mux.HandleFunc("/apis/coordination.k8s.io/v1", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "coordination.k8s.io/v1",
			APIResources: []metav1.APIResource{{Name: "leases", SingularName: "lease", Namespaced: true, Kind: "Lease", Verbs: allVerbs}}})
	})
	notFound := func(w http.ResponseWriter, name string) {
		writeJSON(w, 404, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Reason: metav1.StatusReasonNotFound, Code: 404, Message: `pods "` + name + `" not found`,
			Details: &metav1.StatusDetails{Name: name, Kind: "pods"}})
	}
	store := func(p *corev1.Pod) []byte {
		p.Namespace = "default"
		p.ResourceVersion = time.Now().Format("150405.000000000")
		b, _ := json.Marshal(p)
		f.pods[p.Name] = b
		return b
	}
	mux.HandleFunc("/api/v1/namespaces/default/pods", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "unsupported", 405)
			return
		}
		var p corev1.Pod
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		p.UID = "uid-1"
		p.CreationTimestamp = metav1.Now()
		f.mu.Lock()
		b := store(&p)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		w.Write(b)
	})
	mux.HandleFunc("/api/v1/namespaces/default/pods/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		f.mu.Lock()
		defer f.mu.Unlock()
		cur, ok := f.pods[name]
		if !ok {
			notFound(w, name)
			return
		}
		switch r.Method {
		case http.MethodGet:
			w.Header().Set("Content-Type", "application/json")
			w.Write(cur)
		case http.MethodPatch:
			if ct := r.Header.Get("Content-Type"); ct != "application/strategic-merge-patch+json" {
				http.Error(w, "patch type "+ct, 415)
				return
			}
			patch, _ := io.ReadAll(r.Body)
			merged, err := strategicpatch.StrategicMergePatch(cur, patch, corev1.Pod{})
			if err != nil {
				http.Error(w, err.Error(), 422)
				return
			}
			var p corev1.Pod
			json.Unmarshal(merged, &p)
			w.Header().Set("Content-Type", "application/json")
			w.Write(store(&p))
		default:
			http.Error(w, "unsupported", 405)
		}
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests = append(f.requests, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Content-Type")+" accept="+r.Header.Get("Accept"))
		f.mu.Unlock()
		mux.ServeHTTP(w, r)
	})
}

// kubectlAgainst starts the fake API with oa and returns a runner for
// kubectl pointed at it.
func kubectlAgainst(t *testing.T, oa http.Handler) (*fakeAPI, func(stdin string, args ...string) (string, error)) {
	t.Helper()
	if _, err := os.Stat(kubectl); err != nil {
		t.Skipf("kubectl not installed: %v", err)
	}
	f := &fakeAPI{pods: map[string][]byte{}}
	srv := httptest.NewServer(f.handler(t, oa))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: srv.URL}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: "default"}
	cfg.CurrentContext = "x"
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return f, func(stdin string, args ...string) (string, error) {
		cmd := exec.Command(kubectl, append([]string{"--kubeconfig", path}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+dir, "KUBECACHEDIR="+filepath.Join(dir, "cache"))
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
}

// built is shared by the tests: the service is immutable, and building it
// reflects over the whole Pod type graph.
var built = sync.OnceValues(func() (*openapi.Service, error) {
	return openapi.New(openapi.Options{Version: "v1.37.2", Resources: servedResources()})
})

func newService(t *testing.T) *openapi.Service {
	t.Helper()
	oa, err := built()
	if err != nil {
		t.Fatal(err)
	}
	return oa
}

func TestKubectlExplain(t *testing.T) {
	f, run := kubectlAgainst(t, newService(t))
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"explain", "pod.spec.containers"}, []string{
			"KIND:       Pod", "VERSION:    v1", "FIELD: containers <[]Container>",
			"List of containers belonging to the pod.",
			"name\t<string> -required-", "image\t<string>", "ports\t<[]ContainerPort>",
			"resources\t<ResourceRequirements>",
		}},
		{[]string{"explain", "pods.spec.containers.resources.limits"}, []string{"FIELD: limits <map[string]Quantity>"}},
		{[]string{"explain", "pod.metadata.creationTimestamp"}, []string{"FIELD: creationTimestamp <string>"}},
		{[]string{"explain", "lease.spec", "--api-version=coordination.k8s.io/v1"}, []string{"GROUP:      coordination.k8s.io", "holderIdentity\t<string>"}},
		{[]string{"explain", "pod.spec.containers.livenessProbe.httpGet.port"}, []string{"FIELD: port <IntOrString>"}},
		// The v2 document, which kubectl fetches as protobuf.
		{[]string{"explain", "pod.spec.containers", "--output=plaintext-openapiv2"}, []string{
			"RESOURCE: containers <[]Object>", "name\t<string> -required-", "image\t<string>"}},
	}
	for _, tc := range tests {
		out, err := run("", tc.args...)
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", tc.args, err, out)
		}
		for _, want := range tc.want {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl %v output lacks %q:\n%s", tc.args, want, out)
			}
		}
	}
	var v3, v2 bool
	for _, r := range f.seen() {
		v3 = v3 || strings.HasPrefix(r, "GET /openapi/v3/api/v1?hash=")
		v2 = v2 || strings.HasPrefix(r, "GET /openapi/v2") && strings.Contains(r, "accept=application/com.github.proto-openapi.spec.v2")
	}
	if !v3 || !v2 {
		t.Errorf("kubectl explain fetched /openapi/v3/api/v1 by hash: %v, /openapi/v2 as protobuf: %v; requests: %v", v3, v2, f.seen())
	}
}

const podYAML = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    app: web
spec:
  containers:
  - name: c
    image: nginx
    ports:
    - containerPort: 80
  - name: sidecar
    image: busybox
`

func TestKubectlApplyClientSide(t *testing.T) {
	f, run := kubectlAgainst(t, newService(t))
	out, err := run(podYAML, "apply", "-f", "-")
	if err != nil || strings.TrimSpace(out) != "pod/web created" {
		t.Fatalf("first apply: %v\n%s", err, out)
	}
	changed := strings.Replace(podYAML, "app: web", "app: web2", 1)
	changed = strings.Replace(changed, "image: busybox", "image: busybox:1.36", 1)
	out, err = run(changed, "apply", "-f", "-")
	if err != nil || strings.TrimSpace(out) != "pod/web configured" {
		t.Fatalf("second apply: %v\n%s", err, out)
	}

	var created, patched string
	for _, r := range f.seen() {
		switch {
		case strings.HasPrefix(r, "POST /api/v1/namespaces/default/pods"):
			created = r
		case strings.HasPrefix(r, "PATCH /api/v1/namespaces/default/pods/web"):
			patched = r
		}
	}
	// kubectl found fieldValidation in the OpenAPI document and let the
	// server validate.
	if !strings.Contains(created, "fieldValidation=Strict") {
		t.Errorf("create request %q does not ask for server-side field validation; requests: %v", created, f.seen())
	}
	if !strings.Contains(patched, "application/strategic-merge-patch+json") || !strings.Contains(patched, "fieldValidation=Strict") {
		t.Errorf("patch request %q", patched)
	}
	f.mu.Lock()
	stored := string(f.pods["web"])
	f.mu.Unlock()
	for _, want := range []string{`"app":"web2"`, `"image":"busybox:1.36"`, `"name":"c"`, `"image":"nginx"`} {
		if !strings.Contains(stored, want) {
			t.Errorf("stored pod lacks %s: %s", want, stored)
		}
	}
}
