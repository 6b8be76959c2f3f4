package registry_test

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kite-project/kite/registry"
	"github.com/kite-project/kite/registry/builtin"
)

// TestAllocateIsSettledByTheWrite checks the Strategy.Allocate and
// Release hooks: each allocation is finished once, true when its write
// succeeded and false when it did not (a name taken, a dry run), and a
// deleted object is released.
func TestAllocateIsSettledByTheWrite(t *testing.T) {
	var log []string
	strat := builtin.ConfigMaps()
	strat.Allocate = func(_ context.Context, obj, old runtime.Object, dryRun bool) (func(bool), error) {
		op := "create"
		if old != nil {
			op = "update"
		}
		if dryRun {
			op += "-dry"
		}
		name := obj.(metav1.Object).GetName()
		return func(ok bool) {
			if ok {
				log = append(log, op+" "+name+" committed")
			} else {
				log = append(log, op+" "+name+" reverted")
			}
		}, nil
	}
	strat.Release = func(_ context.Context, obj runtime.Object) {
		log = append(log, "released "+obj.(metav1.Object).GetName())
	}
	s := newStore(t, strat)
	ctx := t.Context()
	steps := []struct {
		name string
		run  func() error
		want []string
	}{
		{"a create commits", func() error { _, err := s.Create(ctx, "ns", configMap("a"), &metav1.CreateOptions{}); return err },
			[]string{"create a committed"}},
		{"a create of a taken name reverts", func() error {
			_, err := s.Create(ctx, "ns", configMap("a"), &metav1.CreateOptions{})
			return refused(err)
		},
			[]string{"create a reverted"}},
		{"a dry-run create reverts", func() error {
			_, err := s.Create(ctx, "ns", configMap("b"), &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}, []string{"create-dry b reverted"}},
		{"an update commits", func() error {
			_, _, err := s.Update(ctx, &registry.UpdateRequest{Namespace: "ns", Name: "a", Object: func(_ context.Context, existing runtime.Object) (runtime.Object, error) {
				existing.(metav1.Object).SetLabels(map[string]string{"x": "y"})
				return existing, nil
			}})
			return err
		}, []string{"update a committed"}},
		{"a delete releases", func() error { _, _, err := s.Delete(ctx, "ns", "a", &metav1.DeleteOptions{}); return err },
			[]string{"released a"}},
	}
	for _, step := range steps {
		log = nil
		if err := step.run(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if !slices.Equal(log, step.want) {
			t.Errorf("%s: %q, want %q", step.name, log, step.want)
		}
	}
}

// refused is nil when err is (a step that must fail did), an error when
// it is nil.
func refused(err error) error {
	if err == nil {
		return context.Canceled
	}
	return nil
}
