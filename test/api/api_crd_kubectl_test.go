package api_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const kubectlCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.kubectl.example.com
spec:
  group: kubectl.example.com
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
    shortNames: [wd]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
    additionalPrinterColumns:
    - name: Size
      type: string
      jsonPath: .spec.size
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    schema:
      openAPIV3Schema:
        type: object
        description: A Widget is a test resource.
        properties:
          spec:
            type: object
            description: What the widget should be.
            properties:
              size:
                type: string
                description: How big the widget is.
              replicas:
                type: integer
          status:
            type: object
            properties:
              replicas:
                type: integer
`

const kubectlWidget = `apiVersion: kubectl.example.com/v1
kind: Widget
metadata:
  name: w1
  namespace: default
spec:
  size: large
  replicas: 2
`

// TestKubectlCustomResources drives a CRD and its custom resources with
// kubectl: apply of both, get by short name with the printer columns,
// explain, a merge patch (and strategic merge refused with 415, as
// upstream), scale, and delete of the CRD with an instance.
func TestKubectlCustomResources(t *testing.T) {
	dir := t.TempDir()
	crdFile, crFile := filepath.Join(dir, "crd.yaml"), filepath.Join(dir, "cr.yaml")
	os.WriteFile(crdFile, []byte(kubectlCRD), 0o600)
	os.WriteFile(crFile, []byte(kubectlWidget), 0o600)
	kubectl(t, "apply", "-f", crdFile)
	kubectl(t, "wait", "--for=condition=Established", "--timeout=10s", "crd/widgets.kubectl.example.com")
	if out := kubectl(t, "api-resources", "--api-group=kubectl.example.com"); !strings.Contains(out, "widgets") || !strings.Contains(out, "wd") {
		t.Errorf("api-resources:\n%s", out)
	}
	kubectl(t, "apply", "-f", crFile)
	out := kubectl(t, "get", "wd", "-n", "default")
	if !strings.Contains(out, "SIZE") || !strings.Contains(out, "REPLICAS") || !strings.Contains(out, "large") {
		t.Errorf("get with printer columns:\n%s", out)
	}
	if out := kubectl(t, "get", "all", "-n", "default"); !strings.Contains(out, "widget.kubectl.example.com/w1") {
		t.Errorf("get all (categories: [all]):\n%s", out)
	}
	if out := kubectl(t, "explain", "widgets.spec.size"); !strings.Contains(out, "How big the widget is.") {
		t.Errorf("explain:\n%s", out)
	}
	kubectl(t, "patch", "widget", "w1", "-n", "default", "--type=merge", "-p", `{"spec":{"size":"small"}}`)
	if out := kubectl(t, "get", "widget", "w1", "-n", "default", "-o", "jsonpath={.spec.size} {.metadata.generation}"); out != "small 2" {
		t.Errorf("after merge patch: %q, want \"small 2\"", out)
	}
	code, st, _ := raw(t, "PATCH", "/apis/kubectl.example.com/v1/namespaces/default/widgets/w1", "application/strategic-merge-patch+json", "application/json", []byte(`{"spec":{"size":"x"}}`))
	if code != 415 || st.Reason != "UnsupportedMediaType" || strings.Contains(st.Message, "strategic") {
		t.Errorf("strategic merge patch: %d %s %q, want 415 listing the other patch types", code, st.Reason, st.Message)
	}
	kubectl(t, "scale", "widget", "w1", "-n", "default", "--replicas=5")
	if out := kubectl(t, "get", "widget", "w1", "-n", "default", "-o", "jsonpath={.spec.replicas}"); out != "5" {
		t.Errorf("after scale: spec.replicas %q", out)
	}
	if code, st, _ := raw(t, "PATCH", "/apis/kubectl.example.com/v1/namespaces/default/widgets/w1/scale", "application/merge-patch+json", "application/json", []byte(`{"spec":{"replicas":-1}}`)); code != 422 || !strings.Contains(st.Message, `Widget.kubectl.example.com "w1" is invalid: .spec.replicas: Invalid value: -1: should be a non-negative integer`) {
		t.Errorf("scale to -1: %d %q, want 422", code, st.Message)
	}
	code, _, hdr := raw(t, "GET", "/apis/kubectl.example.com/v1/namespaces/default/widgets/w1/scale", "", "application/json", nil)
	if code != 200 {
		t.Errorf("GET scale: %d %v", code, hdr)
	}
	kubectl(t, "delete", "-f", crdFile, "--timeout=20s")
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := kubectlErr(t, "get", "crd", "widgets.kubectl.example.com")
		if err != nil && strings.Contains(out, "NotFound") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CRD still there:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
