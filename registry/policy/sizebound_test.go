package policy

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/randfill"
)

// TestSizeBoundCoversWhatCELReads: for random objects of every built-in
// type whose protobuf size is used as the bound (protoCovers), every
// string, list and map of the object's JSON view (CEL's view of a typed
// object) is within sizeBoundOf. The types the bound does not cover fall
// back to the JSON length.
func TestSizeBoundCoversWhatCELReads(t *testing.T) {
	var kinds []string
	byKind := map[string]reflect.Type{}
	for gvk, typ := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal {
			continue
		}
		k := gvk.String()
		kinds, byKind[k] = append(kinds, k), typ
	}
	sort.Strings(kinds)
	checked := 0
	for _, k := range kinds {
		typ := byKind[k]
		obj, ok := reflect.New(typ).Interface().(runtime.Object)
		if !ok {
			continue
		}
		if _, ok := obj.(interface{ Size() int }); !ok || !protoCovers(reflect.TypeOf(obj)) {
			continue
		}
		checked++
		for seed := range 20 {
			obj := reflect.New(typ).Interface().(runtime.Object)
			filler(int64(seed)).Fill(obj)
			bound := sizeBoundOf(obj)
			js, err := json.Marshal(obj)
			if err != nil {
				t.Fatalf("%s seed %d: %v", k, seed, err)
			}
			var view any
			if err := json.Unmarshal(js, &view); err != nil {
				t.Fatalf("%s seed %d: %v", k, seed, err)
			}
			if got := largestSize(view); got > bound {
				t.Errorf("%s seed %d: a size of %d in the JSON view, bound %d", k, seed, got, bound)
			}
		}
	}
	t.Logf("%d of %d built-in kinds bounded by their protobuf size", checked, len(kinds))
	if checked < 100 {
		t.Errorf("only %d built-in types are bounded by their protobuf size, want most", checked)
	}
}

// TestProtoCovers: the types the protobuf size bounds, and those it does
// not (bounded by their JSON length instead).
func TestProtoCovers(t *testing.T) {
	type untagged struct {
		metav1.TypeMeta `json:",inline"`
		Name            string `json:"name"`
	}
	type custom struct {
		Raw runtime.RawExtension `json:"raw" protobuf:"bytes,1,opt,name=raw"`
	}
	type recursive struct {
		Name     string       `json:"name" protobuf:"bytes,1,opt,name=name"`
		Children []*recursive `json:"children" protobuf:"bytes,2,rep,name=children"`
	}
	type withInterface struct {
		Any any `json:"any" protobuf:"bytes,1,opt,name=any"`
	}
	for _, tc := range []struct {
		v    any
		want bool
	}{
		{&corev1.ConfigMap{}, true},
		{&corev1.Secret{}, true},
		{&corev1.Pod{}, true},
		{&appsv1.Deployment{}, true},
		{&corev1.Service{}, true},
		{&appsv1.ControllerRevision{}, false}, // data is a RawExtension
		{&untagged{}, false},
		{&custom{}, false},
		{&recursive{}, true},
		{&withInterface{}, false},
	} {
		t.Run(fmt.Sprintf("%T", tc.v), func(t *testing.T) {
			if got := protoCovers(reflect.TypeOf(tc.v)); got != tc.want {
				t.Errorf("protoCovers = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSizeBoundOfSmallObjects: the fixed-format strings and apiVersion
// are within the bound of an object whose protobuf form is tiny.
func TestSizeBoundOfSmallObjects(t *testing.T) {
	ts := metav1.NewTime(metav1.Now().AddDate(7000, 0, 0))
	for _, obj := range []runtime.Object{
		&corev1.Event{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"}, EventTime: metav1.NowMicro()},
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "averyveryveryveryveryverylonggroupname.example.com/v1", Kind: "ConfigMap"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: ts}},
		&corev1.Secret{Data: map[string][]byte{"k": make([]byte, 3000)}},
	} {
		bound := sizeBoundOf(obj)
		js, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		var view any
		if err := json.Unmarshal(js, &view); err != nil {
			t.Fatal(err)
		}
		if got := largestSize(view); got > bound {
			t.Errorf("%T: a size of %d in the JSON view, bound %d", obj, got, bound)
		}
	}
}

// filler makes random objects whose JSON form exists: valid quantities
// and managed fields.
func filler(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.2).NumElements(0, 3).MaxDepth(8).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewMilliQuantity(int64(c.Uint64()%1_000_000_000), resource.DecimalSI)
		},
		func(f *metav1.FieldsV1, c randfill.Continue) {
			f.Raw = []byte(`{"f:metadata":{"f:labels":{}}}`)
		},
		func(r *runtime.RawExtension, c randfill.Continue) {
			r.Raw = []byte(`{}`)
		},
	)
}

// largestSize is the largest size CEL can read in a JSON value: a
// string's code points, a list's or a map's length (and its keys').
func largestSize(v any) int64 {
	switch v := v.(type) {
	case string:
		return int64(utf8.RuneCountInString(v))
	case []any:
		n := int64(len(v))
		for _, e := range v {
			n = max(n, largestSize(e))
		}
		return n
	case map[string]any:
		n := int64(len(v))
		for k, e := range v {
			n = max(n, int64(utf8.RuneCountInString(k)), largestSize(e))
		}
		return n
	}
	return 0
}
