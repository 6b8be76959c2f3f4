package apiserver_test

import (
	"bytes"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"

	jsonpatchv5 "github.com/evanphx/json-patch/v5"
	jsonpatchv4 "gopkg.in/evanphx/json-patch.v4"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/apiserver"
)

// doublingCopies is a JSON patch of n copy operations each of which
// doubles the pod's labels' parent: about 2 KB of patch for 16 doublings
// of the whole metadata.
func doublingCopies(n int) []byte {
	ops := make([]string, n)
	for i := range ops {
		ops[i] = fmt.Sprintf(`{"op":"copy","from":"/metadata","path":"/metadata/x%d"}`, i)
	}
	return []byte("[" + strings.Join(ops, ",") + "]")
}

// TestJSONPatchLimits checks upstream's two limits on JSON patches: more
// than 10 000 operations is a 413, and copies adding more than 3 MiB to
// the document a 422 that fails early (the process does not allocate the
// gigabyte sixteen doublings would take), and either leaves the object
// as it was.
func TestJSONPatchLimits(t *testing.T) {
	ns := newNamespace(t, shared)
	path := "/api/v1/namespaces/" + ns + "/pods/p"
	createFuzzPod(t, ns)
	tooMany := bytes.Repeat([]byte(`{"op":"test","path":"/kind","value":"Pod"},`), apiserver.MaxJSONPatchOperations+1)
	tooMany = append(append([]byte("["), tooMany[:len(tooMany)-1]...), ']')
	tests := []struct {
		name    string
		patch   []byte
		code    int
		message string
	}{
		{"more than 10000 operations", tooMany, 413, "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"},
		{"copies past 3 MiB", doublingCopies(16), 422, "the server rejected our request due to an error in our request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, before, _ := send(t, shared, "GET", path, "", nil)
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			code, body, st := send(t, shared, "PATCH", path, "application/json-patch+json", tc.patch)
			runtime.ReadMemStats(&m1)
			if code != tc.code || int(st.Code) != tc.code || st.Message != tc.message {
				t.Errorf("%d %.300s, want %d %q", code, body, tc.code, tc.message)
			}
			alloc := m1.TotalAlloc - m0.TotalAlloc
			t.Logf("the process allocated %d KiB while serving the patch", alloc>>10)
			if alloc > maxPatchAlloc {
				t.Errorf("the patch allocated %d MiB, want at most %d", alloc>>20, maxPatchAlloc>>20)
			}
			if _, after, _ := send(t, shared, "GET", path, "", nil); !bytes.Equal(before, after) {
				t.Errorf("a refused patch changed the pod:\n%s\n%s", before, after)
			}
		})
	}
}

// TestJSONPatchLimitsAreNotGlobal: the copy limit is passed with each
// patch; serving leaves json-patch's package variables (v4's and v5's) as
// the library sets them, so that other code of the process is not
// limited by the API server's rule.
func TestJSONPatchLimitsAreNotGlobal(t *testing.T) {
	ns := newNamespace(t, shared)
	createFuzzPod(t, ns)
	if code, body, _ := send(t, shared, "PATCH", "/api/v1/namespaces/"+ns+"/pods/p", "application/json-patch+json", doublingCopies(1)); code != 200 {
		t.Fatalf("a small copy patch: %d %.300s", code, body)
	}
	if v4, v5 := jsonpatchv4.AccumulatedCopySizeLimit, jsonpatchv5.AccumulatedCopySizeLimit; v4 != 0 || v5 != 0 {
		t.Errorf("json-patch's global copy limits are v4 %d, v5 %d; want both left at 0", v4, v5)
	}
}

// maxPatchAlloc bounds what the whole process may allocate while it
// serves one patch of at most 3 MiB (the body limit).
const maxPatchAlloc = 256 << 20

// createFuzzPod creates the pod p the patch tests patch.
func createFuzzPod(t testing.TB, ns string) {
	t.Helper()
	client := kubernetes.NewForConfigOrDie(shared.RESTConfig())
	if _, err := client.CoreV1().Pods(ns).Create(t.Context(), &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": strings.Repeat("n", 1000)}},
		Spec: v1.PodSpec{Containers: []v1.Container{
			{Name: "a", Image: "i", Env: []v1.EnvVar{{Name: "X", Value: "1"}}},
			{Name: "b", Image: "j", Ports: []v1.ContainerPort{{ContainerPort: 80}}},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// patchTypes are the content types of the patches FuzzPatch sends, by
// the first byte of its input.
var patchTypes = []string{
	"application/json-patch+json",
	"application/merge-patch+json",
	"application/strategic-merge-patch+json",
	"application/apply-patch+yaml",
}

// FuzzPatch sends arbitrary patches of every type to a pod through the
// whole server and checks what a client may rely on: a patch that
// succeeds returns a pod that round-trips and is what is stored; one that
// fails gets a metav1.Status with a 4xx code and leaves the stored pod as
// it was; no patch makes the process allocate more than maxPatchAlloc
// (the body, operation and copy limits hold). The seed corpus is in
// testdata/fuzz/FuzzPatch.
func FuzzPatch(f *testing.F) {
	var once sync.Once
	var path string
	f.Fuzz(func(t *testing.T, kind uint8, patch []byte) {
		once.Do(func() {
			ns := newNamespace(t, shared)
			createFuzzPod(t, ns)
			path = "/api/v1/namespaces/" + ns + "/pods/p"
		})
		contentType := patchTypes[int(kind)%len(patchTypes)]
		_, before, _ := send(t, shared, "GET", path, "", nil)
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		code, body, st := send(t, shared, "PATCH", path+"?fieldManager=fuzz", contentType, patch)
		runtime.ReadMemStats(&m1)
		if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > maxPatchAlloc {
			t.Errorf("%s: the patch allocated %d MiB, want at most %d", contentType, alloc>>20, maxPatchAlloc>>20)
		}
		_, after, _ := send(t, shared, "GET", path, "", nil)
		if code != http.StatusOK {
			if code < 400 || code >= 500 || int(st.Code) != code || st.Status != metav1.StatusFailure {
				t.Fatalf("%s %q: %d %.500s, want a 4xx Status", contentType, patch, code, body)
			}
			if !bytes.Equal(before, after) {
				t.Fatalf("%s %q: refused (%d %s) but the pod changed:\n%s\n%s", contentType, patch, code, st.Message, before, after)
			}
			return
		}
		var got, stored, again v1.Pod
		if err := json.Unmarshal(body, &got); err != nil || got.Kind != "Pod" {
			t.Fatalf("%s %q: 200 but not a pod (%v): %.500s", contentType, patch, err, body)
		}
		encoded, err := json.Marshal(&got)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(encoded, &again); err != nil || !apiequality.Semantic.DeepEqual(got, again) {
			t.Fatalf("%s %q: the patched pod does not round-trip (%v):\n%s\n%s", contentType, patch, err, body, encoded)
		}
		if err := json.Unmarshal(after, &stored); err != nil || !apiequality.Semantic.DeepEqual(got, stored) {
			t.Fatalf("%s %q: the patched pod is not what is stored (%v):\n%s\n%s", contentType, patch, err, body, after)
		}
	})
}
