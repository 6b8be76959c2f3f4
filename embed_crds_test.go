package kite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
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
// Established and served (the goal is 0.5 s; envtest takes seconds).
func BenchmarkStartWith20CRDs(b *testing.B) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for i := range 20 {
		crds = append(crds, crontabs(fmt.Sprintf("bench%d.example.com", i)))
	}
	for b.Loop() {
		srv, err := kite.Start(context.Background(), kite.Options{DataDir: b.TempDir(), EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal", CRDs: crds})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		srv.Close()
		b.StartTimer()
	}
}
