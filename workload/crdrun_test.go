package workload_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/workload"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

const benchPodCRD = "benchpods.bench.kite.io"

// TestRunCustomResourcesSmall runs the custom-resource comparison at a tiny
// size against a real Kite, both orders, and checks that each kind was
// created, listed and watched with the counts asked for and nothing lost,
// that the two kinds' list items are about the same size, that the
// comparison has its rows, and that the CRD and the namespace are gone
// afterwards.
func TestRunCustomResourcesSmall(t *testing.T) {
	for _, crsFirst := range []bool{false, true} {
		name := "pods first"
		if crsFirst {
			name = "custom resources first"
		}
		t.Run(name, func(t *testing.T) {
			opts := workload.Options{Pods: 40, Nodes: 4, Writers: 4, Watchers: 5, Updates: 10, Repeats: 3, DeliveryTimeout: time.Minute}
			report, err := workload.RunCustomResources(t.Context(), shared.RESTConfig(), opts, crsFirst)
			if err != nil {
				t.Fatal(err)
			}
			wantOps := map[string]int{
				"create pods (4 writers)":                                        40,
				"create custom resources (4 writers)":                            40,
				"list all pods from cache (RV=0)":                                3,
				"list all custom resources from cache (RV=0)":                    3,
				"watch fan-out of pods, all namespaces (5 watchers)":             5 * 10,
				"watch fan-out of custom resources, all namespaces (5 watchers)": 5 * 10,
				"delete the CRD until gone (its custom resources first)":         1,
				"delete all pods (deletecollection)":                             1,
			}
			byName := map[string]workload.Result{}
			for _, r := range report.Results {
				byName[r.Name] = r
			}
			for name, ops := range wantOps {
				r, ok := byName[name]
				if !ok {
					t.Errorf("no result %q in %+v", name, report.Results)
					continue
				}
				if r.Ops != ops || r.Rate <= 0 || r.P50 <= 0 || r.P99 < r.P50 {
					t.Errorf("%s: %+v, want %d ops and positive figures", name, r, ops)
				}
				if d := r.Delivery; strings.HasPrefix(name, "watch") && (d == nil || d.Lost != 0 || d.Duplicates != 0 || d.OutOfOrder != 0 || d.Expected != ops) {
					t.Errorf("%s: delivery %+v, want %d expected and nothing lost", name, d, ops)
				}
			}
			if len(report.Results) != len(wantOps) {
				t.Errorf("%d results, want %d", len(report.Results), len(wantOps))
			}

			rows := map[string]workload.Comparison{}
			for _, c := range report.Comparison {
				rows[c.Measure] = c
			}
			size := rows["list item size (JSON)"]
			if size.Pods < 1500 || size.Ratio < 0.9 || size.Ratio > 1.15 {
				t.Errorf("list item sizes %+v: want pods of about 2 KB and custom resources within 10%% of them", size)
			}
			for _, measure := range []string{"creates/s", "list 40 from cache (RV=0), p50", "fan-out, all namespaces, deliveries/s"} {
				if c, ok := rows[measure]; !ok || c.Pods <= 0 || c.CustomResources <= 0 || c.Ratio <= 0 {
					t.Errorf("comparison %q: %+v, want both figures and a ratio", measure, c)
				}
			}
			// 40 objects move the heap by less than a collection's noise:
			// the memory rows must be there, their signs may be anything.
			for _, measure := range []string{"Go heap in use per stored object", "Go heap in use per object, second half", "RSS per stored object"} {
				if _, ok := rows[measure]; !ok {
					t.Errorf("no comparison %q", measure)
				}
			}
			if lost := rows["lost events"]; lost.Pods != 0 || lost.CustomResources != 0 {
				t.Errorf("lost events %+v", lost)
			}
			for _, m := range []*workload.Memory{report.Memory, report.CustomResourceMemory} {
				if m == nil || m.HeapAfter <= 0 || m.NotExposedNote != "" {
					t.Errorf("memory %+v, want heap read after a collection", m)
				}
			}

			cfg := shared.RESTConfig()
			if _, err := dynamic.NewForConfigOrDie(cfg).Resource(crdResource).Get(t.Context(), benchPodCRD, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("CRD after the run: %v, want NotFound", err)
			}
			if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().Get(t.Context(), report.Options.Namespace, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("namespace %s after the run: %v, want NotFound", report.Options.Namespace, err)
			}

			var table bytes.Buffer
			if err := workload.WriteTable(&table, report); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"custom resources against pods", "RATIO", "list item size", "40 custom resources stored"} {
				if !strings.Contains(table.String(), want) {
					t.Errorf("table lacks %q:\n%s", want, table.String())
				}
			}
			t.Logf("\n%s", table.String())
		})
	}
}

// TestRunCustomResourcesLeavesAnExistingCRD checks that a run finding the
// CRD already there fails and neither uses nor deletes it.
func TestRunCustomResourcesLeavesAnExistingCRD(t *testing.T) {
	crds := dynamic.NewForConfigOrDie(shared.RESTConfig()).Resource(crdResource)
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": benchPodCRD},
		"spec": map[string]any{
			"group": "bench.kite.io", "scope": "Namespaced",
			"names": map[string]any{"plural": "benchpods", "kind": "BenchPod"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	if _, err := crds.Create(t.Context(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// t.Context has ended by now.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := crds.Delete(ctx, benchPodCRD, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete CRD: %v", err)
		}
		for {
			if _, err := crds.Get(ctx, benchPodCRD, metav1.GetOptions{}); apierrors.IsNotFound(err) || ctx.Err() != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	// Served before the run: a namespace deleted while a CRD is still
	// being established waits for the namespace controller's retry.
	benchPods := dynamic.NewForConfigOrDie(shared.RESTConfig()).Resource(schema.GroupVersionResource{Group: "bench.kite.io", Version: "v1", Resource: "benchpods"})
	for {
		if _, err := benchPods.List(t.Context(), metav1.ListOptions{}); err == nil {
			break
		} else if t.Context().Err() != nil {
			t.Fatalf("the CRD is not served: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, err := workload.RunCustomResources(t.Context(), shared.RESTConfig(), workload.Options{Pods: 2, Nodes: 1, Watchers: 1, Updates: 1}, false)
	if !apierrors.IsAlreadyExists(err) {
		t.Fatalf("run with the CRD there: %v, want AlreadyExists", err)
	}
	got, err := crds.Get(t.Context(), benchPodCRD, metav1.GetOptions{})
	if err != nil || got.GetDeletionTimestamp() != nil {
		t.Fatalf("CRD after the run: %v (deletion %v), want it untouched", err, got.GetDeletionTimestamp())
	}
}
