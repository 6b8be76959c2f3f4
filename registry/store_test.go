package registry_test

import (
	"context"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/kite-project/kite/apiserver"
	"github.com/kite-project/kite/registry"
	"github.com/kite-project/kite/registry/builtin"
	"github.com/kite-project/kite/storage/etcd"
	"github.com/kite-project/kite/storage/etcd/etcdtest"
)

// newStore returns a registry Store for strat over a fresh embedded etcd.
func newStore(t *testing.T, strat *registry.Strategy) *registry.Store {
	t.Helper()
	_, client := etcdtest.Start(t)
	return newStoreOn(t, client, strat)
}

// newStoreOn returns a registry Store for strat over client's etcd.
func newStoreOn(t *testing.T, client *clientv3.Client, strat *registry.Strategy) *registry.Store {
	t.Helper()
	return newStoreWith(t, client, strat, nil)
}

// newStoreWith returns a registry Store for strat over client's etcd,
// whose writes go through adm (when not nil).
func newStoreWith(t *testing.T, client *clientv3.Client, strat *registry.Strategy, adm registry.Admission) *registry.Store {
	t.Helper()
	scheme, err := apiserver.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	pb := protobuf.NewSerializer(scheme, scheme)
	codec := runtime.NewCodec(runtime.WithVersionEncoder{Version: strat.Kind.GroupVersion(), Encoder: pb, ObjectTyper: scheme}, pb)
	st, err := etcd.New(etcd.Options{
		Client: etcd.NewClient(client), Codec: codec, NewFunc: strat.New, NewListFunc: strat.NewList,
		Prefix: "/registry", ResourcePrefix: "/" + strat.KeyPrefix(), GroupResource: strat.GroupResource(),
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := registry.New(registry.Options{Strategy: strat, Storage: st, FieldManagers: registry.NewFieldManagers(scheme), Admission: adm})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func configMap(name string) *v1.ConfigMap {
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}
}

func TestUpdateWithoutChangeDoesNotWrite(t *testing.T) {
	s := newStore(t, builtin.ConfigMaps())
	ctx := t.Context()
	created, err := s.Create(ctx, "ns", configMap("c"), &metav1.CreateOptions{FieldManager: "a"})
	if err != nil {
		t.Fatal(err)
	}
	same := created.DeepCopyObject()
	out, _, err := s.Update(ctx, &registry.UpdateRequest{Namespace: "ns", Name: "c", Options: metav1.UpdateOptions{FieldManager: "a"},
		Object: func(context.Context, runtime.Object) (runtime.Object, error) { return same.DeepCopyObject(), nil }})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := out.(*v1.ConfigMap).ResourceVersion, created.(*v1.ConfigMap).ResourceVersion; got != want {
		t.Errorf("a no-op update wrote: resourceVersion %s, was %s", got, want)
	}
}

func TestGenerateNameGivesEachCreateANewName(t *testing.T) {
	s := newStore(t, builtin.ConfigMaps())
	names := map[string]bool{}
	for range 20 {
		cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "gen-"}}
		out, err := s.Create(t.Context(), "ns", cm, &metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		name := out.(*v1.ConfigMap).Name
		if len(name) != len("gen-")+5 || names[name] {
			t.Fatalf("generated name %q (seen before: %v)", name, names[name])
		}
		names[name] = true
	}
}

func TestObjectWithFinalizersStaysUntilTheLastIsRemoved(t *testing.T) {
	s := newStore(t, builtin.ConfigMaps())
	ctx := t.Context()
	cm := configMap("f")
	cm.Finalizers = []string{"example.com/hold"}
	if _, err := s.Create(ctx, "ns", cm, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, deleted, err := s.Delete(ctx, "ns", "f", nil)
	if err != nil || deleted {
		t.Fatalf("delete with a finalizer: deleted=%v err=%v, want kept", deleted, err)
	}
	if out.(*v1.ConfigMap).DeletionTimestamp == nil {
		t.Fatalf("no deletionTimestamp after delete with a finalizer")
	}
	_, _, err = s.Update(ctx, &registry.UpdateRequest{Namespace: "ns", Name: "f",
		Object: func(_ context.Context, existing runtime.Object) (runtime.Object, error) {
			c := existing.(*v1.ConfigMap)
			c.Finalizers = nil
			return c, nil
		}})
	if err != nil {
		t.Fatalf("remove finalizer: %v", err)
	}
	if _, err := s.Get(ctx, "ns", "f", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after the last finalizer went: %v, want NotFound", err)
	}
}

func TestDeletePreconditionsAndConflicts(t *testing.T) {
	s := newStore(t, builtin.ConfigMaps())
	ctx := t.Context()
	created, err := s.Create(ctx, "ns", configMap("p"), &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wrong := "not-the-uid"
	_, _, err = s.Delete(ctx, "ns", "p", &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: (*typesUID)(&wrong)}})
	if !apierrors.IsConflict(err) {
		t.Fatalf("delete with a wrong UID precondition: %v, want Conflict", err)
	}
	uid := created.(*v1.ConfigMap).UID
	if _, deleted, err := s.Delete(ctx, "ns", "p", &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil || !deleted {
		t.Fatalf("delete with the right UID: deleted=%v err=%v", deleted, err)
	}
	if _, _, err := s.Delete(ctx, "ns", "p", nil); !apierrors.IsNotFound(err) {
		t.Fatalf("second delete: %v, want NotFound", err)
	}
}

func TestPodGracePeriods(t *testing.T) {
	s := newStore(t, builtin.Pods())
	ctx := t.Context()
	pod := func(name, node string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "c", Image: "i"}}}}
	}
	grace := func(g int64) *metav1.DeleteOptions { return &metav1.DeleteOptions{GracePeriodSeconds: &g} }
	tests := []struct {
		name        string
		pod         *v1.Pod
		opts        *metav1.DeleteOptions
		wantDeleted bool
		wantGrace   int64
	}{
		{name: "unbound pod goes at once", pod: pod("unbound", ""), wantDeleted: true},
		{name: "bound pod waits the spec's grace period", pod: pod("bound", "n1"), wantGrace: 30},
		{name: "bound pod with grace 0 goes at once", pod: pod("bound-zero", "n1"), opts: grace(0), wantDeleted: true},
		{name: "bound pod with an explicit grace period", pod: pod("bound-five", "n1"), opts: grace(5), wantGrace: 5},
		{name: "negative grace becomes 1", pod: pod("bound-neg", "n1"), opts: grace(-3), wantGrace: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := s.Create(ctx, "ns", tt.pod, &metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			out, deleted, err := s.Delete(ctx, "ns", tt.pod.Name, tt.opts)
			if err != nil || deleted != tt.wantDeleted {
				t.Fatalf("deleted=%v err=%v, want deleted=%v", deleted, err, tt.wantDeleted)
			}
			if !tt.wantDeleted {
				p := out.(*v1.Pod)
				if p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != tt.wantGrace || p.DeletionTimestamp == nil {
					t.Fatalf("grace %v, deletionTimestamp %v; want %d", p.DeletionGracePeriodSeconds, p.DeletionTimestamp, tt.wantGrace)
				}
			}
		})
	}
	// A later delete may shorten the grace period, not extend it.
	out, _, err := s.Delete(ctx, "ns", "bound-five", grace(60))
	if err != nil || *out.(*v1.Pod).DeletionGracePeriodSeconds != 5 {
		t.Fatalf("longer grace: %v %v, want 5 kept", err, out.(*v1.Pod).DeletionGracePeriodSeconds)
	}
	out, _, err = s.Delete(ctx, "ns", "bound-five", grace(2))
	if err != nil || *out.(*v1.Pod).DeletionGracePeriodSeconds != 2 {
		t.Fatalf("shorter grace: %v, want 2", err)
	}
}

func TestListNarrowsToTheNamedObject(t *testing.T) {
	s := newStore(t, builtin.ConfigMaps())
	ctx := t.Context()
	for _, n := range []string{"a", "ab", "b"} {
		if _, err := s.Create(ctx, "ns", configMap(n), &metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	opts := &metainternalversion.ListOptions{}
	var err error
	if opts.FieldSelector, err = fieldsParse("metadata.name=a"); err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ctx, "ns", opts)
	if err != nil {
		t.Fatal(err)
	}
	if items := list.(*v1.ConfigMapList).Items; len(items) != 1 || items[0].Name != "a" {
		t.Fatalf("list metadata.name=a: %+v", items)
	}
	if opts.FieldSelector, err = fieldsParse("spec.nodeName=x"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx, "ns", opts); !apierrors.IsBadRequest(err) {
		t.Fatalf("unsupported field selector: %v, want BadRequest", err)
	}
}
