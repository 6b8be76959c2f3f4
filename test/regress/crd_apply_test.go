package regress

import (
	"context"
	"os"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const backupsCRD = "backups.regress.example.com"

// TestServerSideApplyOfCRD installs a realistic CustomResourceDefinition
// with kubectl apply --server-side, applies it again with a change, and
// checks that managed fields work for it as for any other kind: the
// applier owns what it applied, another manager's change of those fields
// is a conflict unless forced.
func TestServerSideApplyOfCRD(t *testing.T) {
	manifest, err := os.ReadFile("testdata/backups-crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crds, err := apiextensionsclient.NewForConfig(config(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = crds.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), backupsCRD, metav1.DeleteOptions{})
	})

	mustKubectl(t, string(manifest), "apply", "--server-side", "-f", "-")
	mustKubectl(t, "", "wait", "--for=condition=Established", "crd/"+backupsCRD, "--timeout=30s")

	// The second revision adds a property and a printer column.
	changed := strings.Replace(string(manifest), `revision: "1"`, `revision: "2"`, 1)
	changed = strings.Replace(changed, `              suspend:
                type: boolean`, `              compression:
                type: string
                enum: [none, gzip, zstd]
              suspend:
                type: boolean`, 1)
	changed = strings.Replace(changed, `    - name: Phase
      type: string
      jsonPath: .status.phase`, `    - name: Phase
      type: string
      jsonPath: .status.phase
    - name: Compression
      type: string
      jsonPath: .spec.compression
      priority: 1`, 1)
	if changed == string(manifest) {
		t.Fatal("the manifest did not change")
	}
	mustKubectl(t, changed, "apply", "--server-side", "-f", "-")

	crd, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), backupsCRD, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v1 := crd.Spec.Versions[0]
	if _, ok := v1.Schema.OpenAPIV3Schema.Properties["spec"].Properties["compression"]; !ok || len(v1.AdditionalPrinterColumns) != 3 || crd.Annotations["regress.example.com/revision"] != "2" {
		t.Fatalf("after the second apply: spec properties %v, %d printer columns, revision %q",
			keys(v1.Schema.OpenAPIV3Schema.Properties["spec"].Properties), len(v1.AdditionalPrinterColumns), crd.Annotations["regress.example.com/revision"])
	}
	if !appliedBy(crd, "kubectl") {
		t.Fatalf("managedFields %+v: want an Apply entry of kubectl", crd.ManagedFields)
	}

	// Another applier may not take kubectl's fields without force.
	other := strings.Replace(changed, `revision: "2"`, `revision: "3"`, 1)
	if out, err := kubectl(t, other, "apply", "--server-side", "--field-manager=other", "-f", "-"); err == nil || !strings.Contains(out, "conflict") {
		t.Fatalf("apply of kubectl's field by another manager: %v\n%s\nwant a conflict", err, out)
	}
	mustKubectl(t, other, "apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", "-")
	crd, err = crds.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), backupsCRD, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if crd.Annotations["regress.example.com/revision"] != "3" || !appliedBy(crd, "other") {
		t.Fatalf("after the forced apply: revision %q, managedFields %+v", crd.Annotations["regress.example.com/revision"], crd.ManagedFields)
	}

	// The CRD serves its kind, which takes server-side apply too.
	ns := namespace(t, "regress-crd-apply")
	mustKubectl(t, `apiVersion: regress.example.com/v1
kind: Backup
metadata:
  name: nightly
  namespace: `+ns+`
spec:
  schedule: "0 3 * * *"
  compression: zstd
  retention: {maxAge: 30d}
  targets:
  - name: data
    selector: {matchLabels: {app: db}}
`, "apply", "--server-side", "-f", "-")
	out := mustKubectl(t, "", "-n", ns, "get", "backups", "nightly", "-o", "jsonpath={.spec.retention.keep}/{.spec.compression}")
	if out != "7/zstd" {
		t.Fatalf("backup: %q, want the defaulted keep 7 and compression zstd", out)
	}
}

// appliedBy reports whether manager applied some of crd's fields.
func appliedBy(crd *apiextensionsv1.CustomResourceDefinition, manager string) bool {
	for _, e := range crd.ManagedFields {
		if e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
