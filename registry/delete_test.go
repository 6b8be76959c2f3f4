package registry_test

import (
	"context"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/registry"
	"github.com/kite-project/kite/registry/apiextensions"
	"github.com/kite-project/kite/registry/builtin"
	"github.com/kite-project/kite/storage/etcd/etcdtest"
)

// deletionStep is one request of a deletion story and what the object
// looks like after it.
type deletionStep struct {
	do string // "delete", "unfinalize" (metadata.finalizers), "finalize" (a namespace's spec.finalizers)
	// grace is the delete's gracePeriodSeconds; nil sends none.
	grace *int64
	// propagation is the delete's propagationPolicy; "" sends none.
	propagation metav1.DeletionPropagation

	wantGone bool
	// wantGrace is deletionGracePeriodSeconds afterwards; nil checks
	// only that deletionTimestamp is set.
	wantGrace *int64
	// wantNotAfterNow says deletionTimestamp is not in the future: a
	// grace period shortened to 0 moved it back.
	wantNotAfterNow bool
	// wantFinalizers is metadata.finalizers afterwards; nil skips.
	wantFinalizers []string
}

func boundPod(name string, grace int64, finalizers ...string) runtime.Object {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers},
		Spec: v1.PodSpec{NodeName: "n1", TerminationGracePeriodSeconds: ptr.To(grace),
			Containers: []v1.Container{{Name: "c", Image: "i"}}},
	}
}

func testCRD() runtime.Object {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}},
		},
	}
}

// TestShorterGraceWinsAndTheLastFinalizerDeletes follows objects of every
// resource whose deletion the Store marks (graceful pods, objects kept by
// finalizers, namespaces, CRDs) through deletes and finalizer removals,
// as upstream's rest.BeforeDelete and ShouldDeleteDuringUpdate decide:
// a shorter grace period always wins, down to 0 and also when finalizers
// keep the object, and an update that removes the last finalizer of an
// object being deleted with grace 0 deletes it.
func TestShorterGraceWinsAndTheLastFinalizerDeletes(t *testing.T) {
	_, client := etcdtest.Start(t)
	stores := map[string]*registry.Store{}
	for _, strat := range []*registry.Strategy{builtin.Pods(), builtin.ConfigMaps(), builtin.ReplicaSets(), builtin.Namespaces(time.Now), apiextensions.Strategy(nil)} {
		stores[strat.Resource] = newStoreOn(t, client, strat)
	}
	zero := ptr.To[int64](0)
	tests := []struct {
		name     string
		resource string
		obj      runtime.Object
		steps    []deletionStep
	}{{
		name: "pod whose finalizer goes before the kubelet's final delete", resource: "pods",
		obj: boundPod("hold", 2, "example.com/hold"),
		steps: []deletionStep{
			{do: "delete", wantGrace: ptr.To[int64](2)},
			{do: "unfinalize", wantFinalizers: []string{}, wantGrace: ptr.To[int64](2)},
			{do: "delete", grace: zero, wantGone: true},
		},
	}, {
		name: "pod with a finalizer: grace 0 after the grace period", resource: "pods",
		obj: boundPod("hold-zero", 2, "example.com/hold"),
		steps: []deletionStep{
			{do: "delete", wantGrace: ptr.To[int64](2)},
			{do: "delete", grace: zero, wantGrace: zero, wantNotAfterNow: true},
			{do: "delete", grace: zero, wantGrace: zero, wantFinalizers: []string{"example.com/hold"}},
			{do: "unfinalize", wantGone: true},
		},
	}, {
		name: "pod with a finalizer: a longer grace changes nothing", resource: "pods",
		obj: boundPod("hold-longer", 2, "example.com/hold"),
		steps: []deletionStep{
			{do: "delete", wantGrace: ptr.To[int64](2)},
			{do: "delete", grace: ptr.To[int64](60), wantGrace: ptr.To[int64](2)},
			{do: "delete", grace: ptr.To[int64](1), wantGrace: ptr.To[int64](1)},
			{do: "delete", grace: zero, wantGrace: zero},
			{do: "unfinalize", wantGone: true},
		},
	}, {
		name: "pod with a finalizer deleted with grace 0 at once", resource: "pods",
		obj: boundPod("hold-now", 30, "example.com/hold"),
		steps: []deletionStep{
			{do: "delete", grace: zero, wantGrace: zero},
			{do: "unfinalize", wantGone: true},
		},
	}, {
		name: "pod without finalizers: the final delete removes it", resource: "pods",
		obj: boundPod("plain", 30),
		steps: []deletionStep{
			{do: "delete", wantGrace: ptr.To[int64](30)},
			{do: "delete", grace: zero, wantGone: true},
		},
	}, {
		name: "pod deleted in the foreground: the garbage collector's finalizer, then the kubelet's delete", resource: "pods",
		obj: boundPod("foreground", 30),
		steps: []deletionStep{
			{do: "delete", propagation: metav1.DeletePropagationForeground, wantGrace: ptr.To[int64](30), wantFinalizers: []string{metav1.FinalizerDeleteDependents}},
			{do: "delete", grace: zero, wantGrace: zero},
			{do: "unfinalize", wantGone: true},
		},
	}, {
		name: "configmap with a finalizer", resource: "configmaps",
		obj: &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Finalizers: []string{"example.com/hold"}}},
		steps: []deletionStep{
			{do: "delete", wantGrace: zero},
			{do: "delete", grace: ptr.To[int64](30), wantGrace: zero},
			{do: "unfinalize", wantGone: true},
		},
	}, {
		name: "replicaset deleted in the foreground", resource: "replicasets",
		obj: replicaSet("rs"),
		steps: []deletionStep{
			{do: "delete", propagation: metav1.DeletePropagationForeground, wantGrace: zero, wantFinalizers: []string{metav1.FinalizerDeleteDependents}},
			{do: "unfinalize", wantGone: true},
		},
	}, {
		name: "namespace: its last metadata finalizer waits for spec.finalizers", resource: "namespaces",
		obj: &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns-hold", Finalizers: []string{"example.com/hold"}}},
		steps: []deletionStep{
			{do: "delete"},
			{do: "unfinalize", wantFinalizers: []string{}},
			{do: "finalize", wantGone: true},
		},
	}, {
		name: "namespace: finalize deletes it once no finalizer is left", resource: "namespaces",
		obj: &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns-plain"}},
		steps: []deletionStep{
			{do: "delete"},
			{do: "finalize", wantGone: true},
		},
	}, {
		name: "custom resource definition: its cleanup finalizer", resource: "customresourcedefinitions",
		obj: testCRD(),
		steps: []deletionStep{
			{do: "delete", wantGrace: zero, wantFinalizers: []string{apiextensions.CleanupFinalizer}},
			{do: "delete", grace: ptr.To[int64](30), wantGrace: zero, wantFinalizers: []string{apiextensions.CleanupFinalizer}},
			{do: "unfinalize", wantGone: true},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			s := stores[tt.resource]
			ns := ""
			if s.Strategy().Namespaced {
				ns = "ns"
			}
			name := mustAccessor(t, tt.obj).GetName()
			if _, err := s.Create(ctx, ns, tt.obj.DeepCopyObject(), &metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			for i, step := range tt.steps {
				if err := runDeletionStep(ctx, s, ns, name, step); err != nil {
					t.Fatalf("step %d (%s): %v", i, step.do, err)
				}
				got, err := s.Get(ctx, ns, name, &metav1.GetOptions{})
				if step.wantGone {
					if !apierrors.IsNotFound(err) {
						t.Fatalf("step %d (%s): get %v, want NotFound", i, step.do, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("step %d (%s): get: %v, want the object kept", i, step.do, err)
				}
				m := mustAccessor(t, got)
				if m.GetDeletionTimestamp() == nil {
					t.Fatalf("step %d (%s): no deletionTimestamp", i, step.do)
				}
				if g := m.GetDeletionGracePeriodSeconds(); step.wantGrace != nil && (g == nil || *g != *step.wantGrace) {
					t.Errorf("step %d (%s): deletionGracePeriodSeconds %v, want %d", i, step.do, ptrString(g), *step.wantGrace)
				}
				if at := m.GetDeletionTimestamp(); step.wantNotAfterNow && at.After(time.Now()) {
					t.Errorf("step %d (%s): deletionTimestamp %v is in the future, want it moved back", i, step.do, at)
				}
				if step.wantFinalizers != nil && !slices.Equal(m.GetFinalizers(), step.wantFinalizers) {
					t.Errorf("step %d (%s): finalizers %v, want %v", i, step.do, m.GetFinalizers(), step.wantFinalizers)
				}
			}
		})
	}
}

func replicaSet(name string) runtime.Object {
	labels := map[string]string{"app": name}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "i"}}}}},
	}
}

// runDeletionStep sends one request of a deletion story.
func runDeletionStep(ctx context.Context, s *registry.Store, ns, name string, step deletionStep) error {
	switch step.do {
	case "delete":
		opts := &metav1.DeleteOptions{GracePeriodSeconds: step.grace}
		if step.propagation != "" {
			opts.PropagationPolicy = &step.propagation
		}
		_, _, err := s.Delete(ctx, ns, name, opts)
		return err
	case "unfinalize":
		_, _, err := s.Update(ctx, &registry.UpdateRequest{Namespace: ns, Name: name,
			Object: func(_ context.Context, existing runtime.Object) (runtime.Object, error) {
				m, err := meta.Accessor(existing)
				if err != nil {
					return nil, err
				}
				m.SetFinalizers(nil)
				return existing, nil
			}})
		return err
	case "finalize":
		_, _, err := s.Update(ctx, &registry.UpdateRequest{Name: name, Subresource: "finalize",
			Object: func(_ context.Context, existing runtime.Object) (runtime.Object, error) {
				existing.(*v1.Namespace).Spec.Finalizers = nil
				return existing, nil
			}})
		return err
	}
	panic("unknown step " + step.do)
}

func mustAccessor(t *testing.T, obj runtime.Object) metav1.Object {
	t.Helper()
	m, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func ptrString(p *int64) any {
	if p == nil {
		return "nil"
	}
	return *p
}
