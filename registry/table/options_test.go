package table_test

import (
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kite-project/kite/registry/table"
)

func TestIncludeObject(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: map[string]string{"a": "b"}, ResourceVersion: "7"}}
	c := table.New(table.Options{Typer: scheme.Scheme})
	tests := []struct {
		include metav1.IncludeObjectPolicy
		check   func(t *testing.T, obj runtime.Object)
	}{
		{"", func(t *testing.T, obj runtime.Object) {
			pm, ok := obj.(*metav1.PartialObjectMetadata)
			if !ok {
				t.Fatalf("default embeds %T, want PartialObjectMetadata", obj)
			}
			if pm.APIVersion != "meta.k8s.io/v1" || pm.Kind != "PartialObjectMetadata" || pm.Name != "web" || pm.Labels["a"] != "b" {
				t.Errorf("partial %+v", pm)
			}
		}},
		{metav1.IncludeMetadata, func(t *testing.T, obj runtime.Object) {
			if _, ok := obj.(*metav1.PartialObjectMetadata); !ok {
				t.Fatalf("Metadata embeds %T", obj)
			}
		}},
		{metav1.IncludeNone, func(t *testing.T, obj runtime.Object) {
			if obj != nil {
				t.Fatalf("None embeds %T", obj)
			}
		}},
		{metav1.IncludeObject, func(t *testing.T, obj runtime.Object) {
			got, ok := obj.(*corev1.Pod)
			if !ok {
				t.Fatalf("Object embeds %T", obj)
			}
			if got.APIVersion != "v1" || got.Kind != "Pod" || got.Name != "web" {
				t.Errorf("embedded pod typed %q %q name %q", got.APIVersion, got.Kind, got.Name)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(string(tc.include)+"_", func(t *testing.T) {
			tbl, err := c.Convert(p, table.ConvertOptions{IncludeObject: tc.include})
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, tbl.Rows[0].Object.Object)
			if p.Kind != "" {
				t.Error("Convert set the kind on the caller's object")
			}
		})
	}
	if _, err := c.Convert(p, table.ConvertOptions{IncludeObject: "All"}); !apierrors.IsBadRequest(err) {
		t.Errorf("includeObject=All: %v, want 400", err)
	}
}

func TestListMetadataAndHeaders(t *testing.T) {
	list := &corev1.PodList{
		ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next", RemainingItemCount: ptrInt64(5)},
		Items:    []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}},
	}
	tbl, err := conv().Convert(list, table.ConvertOptions{NoHeaders: true, GroupVersion: schema.GroupVersion{Group: "meta.k8s.io", Version: "v1beta1"}})
	if err != nil {
		t.Fatal(err)
	}
	if tbl.APIVersion != "meta.k8s.io/v1beta1" || tbl.Kind != "Table" {
		t.Errorf("typed %s %s", tbl.APIVersion, tbl.Kind)
	}
	if tbl.ResourceVersion != "42" || tbl.Continue != "next" || tbl.RemainingItemCount == nil || *tbl.RemainingItemCount != 5 {
		t.Errorf("list meta %+v", tbl.ListMeta)
	}
	if tbl.ColumnDefinitions != nil {
		t.Error("NoHeaders still sent columns")
	}
	if len(tbl.Rows) != 2 || tbl.Rows[0].Cells[0] != "a" || tbl.Rows[1].Cells[0] != "b" {
		t.Errorf("rows %v", tbl.Rows)
	}

	empty, err := conv().Convert(&corev1.NodeList{}, table.ConvertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if empty.Rows == nil || len(empty.Rows) != 0 || len(empty.ColumnDefinitions) != 10 {
		t.Errorf("empty list: rows %v, %d columns", empty.Rows, len(empty.ColumnDefinitions))
	}

	if _, err := conv().Convert(list, table.ConvertOptions{GroupVersion: schema.GroupVersion{Group: "meta.k8s.io", Version: "v2"}}); !apierrors.IsNotAcceptable(err) {
		t.Errorf("v2 table: %v, want 406", err)
	}
	if _, err := conv().Convert(&metav1.Status{}, table.ConvertOptions{}); !apierrors.IsNotAcceptable(err) {
		t.Errorf("object without metadata: %v, want 406", err)
	}
}

func ptrInt64(v int64) *int64 { return &v }

func TestRequested(t *testing.T) {
	tests := []struct {
		accept string
		want   string
		ok     bool
	}{
		{"application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json", "meta.k8s.io/v1", true},
		{"application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json", "meta.k8s.io/v1beta1", true},
		{"application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io", "meta.k8s.io/v1", true},
		{"application/json", "", false},
		{"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", "", false},
		{"application/json;as=Table;v=v2;g=meta.k8s.io", "", false},
		{"application/json;as=Table;v=v1;g=example.com", "", false},
		{"", "", false},
	}
	for _, tc := range tests {
		gv, ok := table.Requested(tc.accept)
		if ok != tc.ok || (ok && gv.String() != tc.want) {
			t.Errorf("Requested(%q) = %v, %v; want %q, %v", tc.accept, gv, ok, tc.want, tc.ok)
		}
	}
}

func TestParseQuery(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  metav1.IncludeObjectPolicy
		bad   bool
	}{
		{"", "", false}, {"includeObject=None", metav1.IncludeNone, false},
		{"includeObject=Object", metav1.IncludeObject, false}, {"includeObject=bogus", "", true},
	} {
		q, _ := url.ParseQuery(tc.query)
		got, err := table.ParseQuery(q)
		if tc.bad {
			if !apierrors.IsBadRequest(err) {
				t.Errorf("%q: %v, want 400", tc.query, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(table.ConvertOptions{IncludeObject: tc.want}, got); diff != "" {
			t.Errorf("%q: %s", tc.query, diff)
		}
	}
}
