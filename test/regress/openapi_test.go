package regress

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestOpenAPIV2ServesCRDSchemasV2CannotExpress installs a CRD whose schema
// uses anyOf (int-or-string) and schema-valued additionalProperties, then
// reads /openapi/v2 as JSON and as the protobuf kubectl asks for: both
// answer, with the CRD's kind in them, and kubectl's client-side
// validation, which reads v2, still works for an unrelated kind.
func TestOpenAPIV2ServesCRDSchemasV2CannotExpress(t *testing.T) {
	manifest, err := os.ReadFile("testdata/backups-crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const group = "v2.regress.example.com"
	crd := strings.ReplaceAll(string(manifest), "regress.example.com", group)
	crds, err := apiextensionsclient.NewForConfig(config(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = crds.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), "backups."+group, metav1.DeleteOptions{})
	})
	mustKubectl(t, crd, "create", "-f", "-")
	mustKubectl(t, "", "wait", "--for=condition=Established", "crd/backups."+group, "--timeout=30s")

	rest := kubernetes.NewForConfigOrDie(config(t)).Discovery().RESTClient()
	definition := "com.example.regress.v2.v1.Backup"
	deadline := time.Now().Add(10 * time.Second)
	for {
		body, err := rest.Get().AbsPath("/openapi/v2").SetHeader("Accept", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf").Do(t.Context()).Raw()
		if err != nil {
			t.Fatalf("GET /openapi/v2 as protobuf: %v", err)
		}
		var doc openapi_v2.Document
		if err := proto.Unmarshal(body, &doc); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, d := range doc.GetDefinitions().GetAdditionalProperties() {
			found = found || d.GetName() == definition
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("protobuf v2 document has no %s after 10 s", definition)
		}
		time.Sleep(100 * time.Millisecond)
	}
	body, err := rest.Get().AbsPath("/openapi/v2").SetHeader("Accept", "application/json").Do(t.Context()).Raw()
	if err != nil || !strings.Contains(string(body), definition) {
		t.Fatalf("GET /openapi/v2 as JSON: %v, has %s: %v", err, definition, strings.Contains(string(body), definition))
	}

	// A List document is described by v2 only: kubectl validates it there.
	ns := namespace(t, "regress-openapi-v2")
	out := mustKubectl(t, `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: listed
    namespace: `+ns+`
  data: {k: v}
`, "apply", "--validate=true", "-f", "-")
	if !strings.Contains(out, "configmap/listed created") {
		t.Fatalf("kubectl apply of a List: %s", out)
	}
}
