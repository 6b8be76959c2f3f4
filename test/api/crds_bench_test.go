package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite"
)

// benchObjects is how many pods and custom resources each list holds.
const benchObjects = 10000

// BenchmarkListFromCache lists 10 000 pods and 10 000 custom resources of
// about the same JSON size from the watch cache (resourceVersion=0), as
// JSON, and reports the heap each kind of object costs in the cache. The
// issue's goal: a custom resource costs no more than a pod (within 1.2x).
func BenchmarkListFromCache(b *testing.B) {
	ctx := context.Background()
	s, err := kite.Start(ctx, kite.Options{DataDir: b.TempDir(), EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal",
		CRDs: []*apiextensionsv1.CustomResourceDefinition{benchCRD()}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	hc, err := rest.HTTPClientFor(s.RESTConfig())
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		create     func(i int) error
	}{
		{"pods", "/api/v1/namespaces/default/pods", func(i int) error {
			_, err := s.Resources().Store("pods").Create(ctx, "default", benchPod(i), &metav1.CreateOptions{})
			return err
		}},
		{"customresources", "/apis/bench.example.com/v1/namespaces/default/widgets", func(i int) error {
			_, err := s.Resources().Store("widgets.bench.example.com").Create(ctx, "default", benchWidget(i), &metav1.CreateOptions{})
			return err
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for i := range benchObjects {
				if err := tc.create(i); err != nil {
					b.Fatal(err)
				}
			}
			get := func() int {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+tc.path+"?resourceVersion=0", nil)
				req.Header.Set("Accept", "application/json")
				resp, err := hc.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("list: %s", resp.Status)
				}
				return int(n)
			}
			size := get() // every object's bytes encoded once
			time.Sleep(100 * time.Millisecond)
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ResetTimer()
			for b.Loop() {
				get()
			}
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/benchObjects, "heapB/object")
			b.ReportMetric(float64(size)/benchObjects, "JSONB/object")
		})
	}
}

func benchCRD() *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.bench.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "bench.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"nodeName": str, "image": str, "command": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}},
						"restartPolicy": str, "serviceAccountName": str,
					}}}}}}},
		},
	}
}

func benchPod(i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%05d", i), Namespace: "default", Labels: map[string]string{"app": "bench"}},
		Spec:       corev1.PodSpec{NodeName: fmt.Sprintf("node-%d", i%100), Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10", Command: []string{"/pause", "--flag"}}}},
	}
}

func benchWidget(i int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "bench.example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": fmt.Sprintf("w-%05d", i), "namespace": "default", "labels": map[string]any{"app": "bench"}},
		"spec": map[string]any{"nodeName": fmt.Sprintf("node-%d", i%100), "image": "registry.k8s.io/pause:3.10", "command": []any{"/pause", "--flag"},
			"restartPolicy": "Always", "serviceAccountName": "default"},
	}}
}

// BenchmarkCRDServedAfterCreate measures how long a new CRD takes from its
// create to the first successful list of its custom resources (Established,
// routes and discovery replaced): what an operator's installer waits for.
// TestCRDServedFromEstablished checks that it happens; this says how fast.
func BenchmarkCRDServedAfterCreate(b *testing.B) {
	ctx := context.Background()
	var total time.Duration
	for i := range b.N {
		group := fmt.Sprintf("bench%d-%d.served.example.com", i, time.Now().UnixNano())
		crd := crontabs(group)
		start := time.Now()
		if _, err := createCRD(b, ctx, crd); err != nil {
			b.Fatalf("create CRD: %v", err)
		}
		rc := crdClient(b)
		for {
			err := rc.Get().AbsPath("/apis", group, "v1", "namespaces", "default", "crontabs").Do(ctx).Error()
			if err == nil {
				break
			}
			if time.Since(start) > 30*time.Second {
				b.Fatalf("crontabs.%s not served after 30s: %v", group, err)
			}
			time.Sleep(time.Millisecond)
		}
		total += time.Since(start)
		if err := rc.Delete().Resource("customresourcedefinitions").Name("crontabs." + group).Do(ctx).Error(); err != nil {
			b.Fatalf("delete CRD: %v", err)
		}
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms-to-served")
}
