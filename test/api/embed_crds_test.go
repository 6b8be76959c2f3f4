package api_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kite-project/kite"
)

// TestStartInstallsCRDs starts a control plane with one CRD as an object
// and two from a directory (beside a kustomization.yaml, which is
// skipped): when Start returns, discovery lists all three and their
// resources serve.
func TestStartInstallsCRDs(t *testing.T) {
	dir := t.TempDir()
	var docs []string
	for _, g := range []string{"files-a.example.com", "files-b.example.com"} {
		b, err := yaml.Marshal(crontabs(g))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	os.WriteFile(filepath.Join(dir, "crds.yaml"), []byte(strings.Join(docs, "---\n")), 0o600)
	os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("resources:\n- crds.yaml\n"), 0o600)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	srv, err := kite.Start(ctx, kite.Options{
		EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal",
		CRDs:     []*apiextensionsv1.CustomResourceDefinition{crontabs("object.example.com")},
		CRDPaths: []string{dir},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dc := discovery.NewDiscoveryClientForConfigOrDie(srv.RESTConfig())
	dyn := dynamic.NewForConfigOrDie(srv.RESTConfig())
	for _, g := range []string{"object.example.com", "files-a.example.com", "files-b.example.com"} {
		if _, err := dc.ServerResourcesForGroupVersion(g + "/v1"); err != nil {
			t.Errorf("discovery of %s/v1 right after Start: %v", g, err)
		}
		if _, err := dyn.Resource(schema.GroupVersionResource{Group: g, Version: "v1", Resource: "crontabs"}).Namespace("default").List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("list %s crontabs right after Start: %v", g, err)
		}
	}
}

// TestStartRefusesBadCRDs: a CRD the API refuses fails Start with its
// message.
func TestStartRefusesBadCRDs(t *testing.T) {
	bad := crontabs("bad-start.example.com")
	bad.Name = "wrong.bad-start.example.com"
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	srv, err := kite.Start(ctx, kite.Options{EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal", CRDs: []*apiextensionsv1.CustomResourceDefinition{bad}})
	if err == nil {
		srv.Close()
		t.Fatal("Start accepted a CRD whose name is not plural.group")
	}
	if !strings.Contains(err.Error(), `must be spec.names.plural+"."+spec.group`) {
		t.Errorf("Start: %v", err)
	}
}

// BenchmarkStartWith20CRDs measures Start with 20 CRDs until every one is
// Established and served (the goal is 0.5 s; envtest takes seconds): 20
// crontabs (one CEL rule each), and 20 CRDs as operators write them (two
// versions of a kubebuilder-style schema with conditions, list maps and
// eight CEL rules, two of them transition rules). cpu-ms/op is the
// process's CPU time per Start (without Close), less at the mercy of a
// shared machine's load than ns/op.
func BenchmarkStartWith20CRDs(b *testing.B) {
	for _, tc := range []struct {
		name string
		crd  func(group string) *apiextensionsv1.CustomResourceDefinition
	}{
		{"crontabs", crontabs},
		{"operator", operatorCRD},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var crds []*apiextensionsv1.CustomResourceDefinition
			for i := range 20 {
				crds = append(crds, tc.crd(fmt.Sprintf("bench%d.example.com", i)))
			}
			var cpu time.Duration
			for b.Loop() {
				before := cpuTime(b)
				srv, err := kite.Start(context.Background(), kite.Options{DataDir: b.TempDir(), EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal", CRDs: crds})
				if err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime(b) - before
				b.StopTimer()
				srv.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuTime is the CPU time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// operatorCRD is a CRD as kubebuilder writes them for an operator: two
// served versions of one schema (v1 stored), a status subresource with
// metav1.Condition-shaped conditions, a list map, an int-or-string,
// defaults, enums, patterns and CEL rules, two of them transition rules.
func operatorCRD(group string) *apiextensionsv1.CustomResourceDefinition {
	str := func(pattern string) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "string", Pattern: pattern}
	}
	rules := func(r ...string) apiextensionsv1.ValidationRules {
		var out apiextensionsv1.ValidationRules
		for _, rule := range r {
			out = append(out, apiextensionsv1.ValidationRule{Rule: rule, Message: "rule " + rule})
		}
		return out
	}
	condition := apiextensionsv1.JSONSchemaProps{Type: "object", Required: []string{"type", "status", "lastTransitionTime", "reason", "message"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"type":               {Type: "string", MaxLength: ptr.To[int64](316), Pattern: `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`},
			"status":             {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"True"`)}, {Raw: []byte(`"False"`)}, {Raw: []byte(`"Unknown"`)}}},
			"observedGeneration": {Type: "integer", Format: "int64", Minimum: ptr.To(0.0)},
			"lastTransitionTime": {Type: "string", Format: "date-time"},
			"reason":             {Type: "string", MaxLength: ptr.To[int64](1024), MinLength: ptr.To[int64](1), Pattern: `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`},
			"message":            {Type: "string", MaxLength: ptr.To[int64](32768)},
		}}
	env := apiextensionsv1.JSONSchemaProps{Type: "object", Required: []string{"name"},
		Properties:   map[string]apiextensionsv1.JSONSchemaProps{"name": {Type: "string", MaxLength: ptr.To[int64](63)}, "value": {Type: "string", MaxLength: ptr.To[int64](4096)}},
		XValidations: rules("self.name.matches('^[A-Z_][A-Z0-9_]*$')")}
	schema := &apiextensionsv1.JSONSchemaProps{Type: "object",
		XValidations: rules("self.metadata.name.size() <= 63"),
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"apiVersion": {Type: "string"}, "kind": {Type: "string"}, "metadata": {Type: "object"},
			"spec": {Type: "object", Required: []string{"engine"},
				XValidations: rules("self.minReplicas <= self.maxReplicas", "!has(self.backup) || has(self.backup.schedule) == has(self.backup.retention)"),
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"engine":      {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"postgres"`)}, {Raw: []byte(`"mysql"`)}}, XValidations: rules("self == oldSelf")},
					"version":     {Type: "string", Pattern: `^\d+\.\d+$`, XValidations: rules("self >= oldSelf")},
					"minReplicas": {Type: "integer", Format: "int32", Minimum: ptr.To(1.0), Default: &apiextensionsv1.JSON{Raw: []byte("1")}},
					"maxReplicas": {Type: "integer", Format: "int32", Maximum: ptr.To(100.0), Default: &apiextensionsv1.JSON{Raw: []byte("3")}},
					"storage": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"size":  {XIntOrString: true, AnyOf: []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}}, Pattern: `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`},
						"class": {Type: "string", XValidations: rules("self != ''")},
					}},
					"backup": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"schedule": str(`^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$`), "retention": {Type: "integer", Minimum: ptr.To(1.0)},
					}},
					"env": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &env}, XListType: ptr.To("map"), XListMapKeys: []string{"name"}, MaxItems: ptr.To[int64](64)},
					"resources": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"limits":   {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &apiextensionsv1.JSONSchemaProps{XIntOrString: true}}},
						"requests": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &apiextensionsv1.JSONSchemaProps{XIntOrString: true}}},
					}},
					"labels": {Type: "object", MaxProperties: ptr.To[int64](64), AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string", MaxLength: ptr.To[int64](253)}}, XValidations: rules("self.all(k, k.size() <= 63)")},
				}},
			"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"conditions":         {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &condition}, XListType: ptr.To("map"), XListMapKeys: []string{"type"}},
				"observedGeneration": {Type: "integer", Format: "int64"},
				"readyReplicas":      {Type: "integer", Format: "int32"},
				"phase":              {Type: "string"},
			}},
		}}
	version := func(name string, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: true, Storage: storage,
			Schema:       &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: schema.DeepCopy()},
			Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
				{Name: "Engine", Type: "string", JSONPath: ".spec.engine"},
				{Name: "Phase", Type: "string", JSONPath: ".status.phase"},
				{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
			}}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "databases." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "databases", Singular: "database", Kind: "Database", ShortNames: []string{"db"}, Categories: []string{"all"}},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{version("v1alpha1", false), version("v1", true)},
		},
	}
}
