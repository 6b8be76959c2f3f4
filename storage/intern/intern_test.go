package intern

import (
	"fmt"
	"reflect"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func sameHeader[M ~map[K]V, K comparable, V any](a, b M) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

func sameBytes(a, b []byte) bool { return unsafe.SliceData(a) == unsafe.SliceData(b) }

func TestEqualValuesShareTheFirstCopy(t *testing.T) {
	tbl := New(Options{})
	b1, b2 := []byte(`{"f:metadata":{}}`), []byte(`{"f:metadata":{}}`)
	if got := tbl.Bytes(b1); !sameBytes(got, b1) {
		t.Error("first slice is not canonical")
	}
	if got := tbl.Bytes(b2); !sameBytes(got, b1) {
		t.Error("equal slice not shared")
	}
	m1, m2 := map[string]string{"app": "web", "tier": "front"}, map[string]string{"tier": "front", "app": "web"}
	tbl.Map(m1)
	if got := tbl.Map(m2); !sameHeader(got, m1) {
		t.Error("equal map not shared")
	}
	l1 := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}
	l2 := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi"), corev1.ResourceCPU: resource.MustParse("0.1")}
	tbl.ResourceList(l1)
	if got := tbl.ResourceList(l2); !sameHeader(got, l1) {
		t.Error("resource lists that print the same are not shared")
	}
	s1 := string([]byte("registry.example.com/web:1.0"))
	s2 := string([]byte("registry.example.com/web:1.0"))
	tbl.String(s1)
	if got := tbl.String(s2); unsafe.StringData(got) != unsafe.StringData(s1) {
		t.Error("equal string not shared")
	}
}

func TestDifferentValuesStayApart(t *testing.T) {
	tbl := New(Options{})
	cases := []struct {
		name string
		a, b map[string]string
	}{
		{"value differs", map[string]string{"app": "web"}, map[string]string{"app": "db"}},
		{"key differs", map[string]string{"app": "web"}, map[string]string{"ap": "pweb"}},
		{"split point differs", map[string]string{"a": "bc"}, map[string]string{"ab": "c"}},
		{"extra key", map[string]string{"a": "b"}, map[string]string{"a": "b", "c": ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tbl.Map(tc.a)
			if got := tbl.Map(tc.b); sameHeader(got, tc.a) || !reflect.DeepEqual(got, tc.b) {
				t.Errorf("Map(%v) = %v, shared with %v", tc.b, got, tc.a)
			}
		})
	}
	l1 := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
	l2 := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1073741824")}
	tbl.ResourceList(l1)
	if got := tbl.ResourceList(l2); sameHeader(got, l1) {
		t.Error("1Gi and 1073741824 print differently but were shared")
	}
}

func TestBudgetBoundsWhatIsKept(t *testing.T) {
	tbl := New(Options{Budget: 100})
	known := []byte("0123456789012345678901234567890123456789") // 40 bytes
	tbl.Bytes(known)
	for i := range 10 {
		b := []byte(fmt.Sprintf("%040d", i))
		tbl.Bytes(b)
	}
	if tbl.used > 100 {
		t.Errorf("table holds %d bytes of keys, budget 100", tbl.used)
	}
	again := []byte("0123456789012345678901234567890123456789")
	if got := tbl.Bytes(again); !sameBytes(got, known) {
		t.Error("a value kept before the budget ran out is no longer shared")
	}
	late := []byte(fmt.Sprintf("%040d", 9))
	if got := tbl.Bytes(late); !sameBytes(got, late) || string(got) != string(late) {
		t.Error("a value past the budget did not come back unchanged")
	}
}

func TestMetaSharesLabelsAnnotationsAndManagedFields(t *testing.T) {
	tbl := New(Options{})
	mk := func(name string) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{"app": "web"},
			Annotations: map[string]string{"note": "x"},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: string([]byte("kubectl")), Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{}}}`)},
			}},
		}
	}
	a, b := mk("a"), mk("b")
	tbl.Meta(a)
	tbl.Meta(b)
	if !sameHeader(a.Labels, b.Labels) || !sameHeader(a.Annotations, b.Annotations) {
		t.Error("labels or annotations not shared")
	}
	if !sameBytes(a.ManagedFields[0].FieldsV1.Raw, b.ManagedFields[0].FieldsV1.Raw) {
		t.Error("managedFields field sets not shared")
	}
	if a.Name != "a" || b.Name != "b" {
		t.Error("names changed")
	}
}

// A value no longer among the recent ones is still found by its key.
func TestValuesSeenLongAgoAreStillShared(t *testing.T) {
	tbl := New(Options{})
	first := map[string]string{"app": "web"}
	firstList := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	tbl.Map(first)
	tbl.ResourceList(firstList)
	for i := range 2 * recent {
		tbl.Map(map[string]string{"app": fmt.Sprint(i)})
		tbl.ResourceList(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(fmt.Sprint(i + 2))})
	}
	if got := tbl.Map(map[string]string{"app": "web"}); !sameHeader(got, first) {
		t.Error("map seen before the recent ones not shared")
	}
	if got := tbl.ResourceList(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000m")}); !sameHeader(got, firstList) {
		t.Error("resource list seen before the recent ones not shared")
	}
}

// Whichever path finds a resource list (recent or by key), the shared
// list prints as the one it replaces.
func TestSharedResourceListsPrintAsTheOriginals(t *testing.T) {
	values := []string{"100m", "0.1", "1", "1000m", "128Mi", "134217728", "1Gi", "1e3", "1k", "1000", "0.5Gi", "512Mi", "1.5", "1500m"}
	tbl := New(Options{})
	for round := range 2 {
		for _, v := range values {
			in := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(v)}
			want := in[corev1.ResourceMemory]
			got := tbl.ResourceList(in)[corev1.ResourceMemory]
			if got.String() != want.String() {
				t.Errorf("round %d: %s was shared with a list printing %s", round, want.String(), got.String())
			}
		}
	}
}

func TestSlicesAndPointersShareByValue(t *testing.T) {
	tbl := New(Options{})
	key := func(k []byte, p corev1.ContainerPort) []byte {
		return AppendField(AppendField(k, p.Name), fmt.Sprint(p.ContainerPort, p.Protocol))
	}
	a := []corev1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
	b := []corev1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
	c := []corev1.ContainerPort{{Name: "http", ContainerPort: 81, Protocol: corev1.ProtocolTCP}}
	Slice(tbl, a, key)
	if got := Slice(tbl, b, key); unsafe.SliceData(got) != unsafe.SliceData(a) {
		t.Error("equal slice not shared")
	}
	if got := Slice(tbl, c, key); unsafe.SliceData(got) != unsafe.SliceData(c) {
		t.Error("different slice shared")
	}
	// Past the recent ones: found by key.
	for i := range 2 * recent {
		Slice(tbl, []corev1.ContainerPort{{ContainerPort: int32(i)}}, key)
	}
	if got := Slice(tbl, []corev1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}}, key); unsafe.SliceData(got) != unsafe.SliceData(a) {
		t.Error("equal slice seen long ago not shared")
	}

	i1, i2, i3 := int64(30), int64(30), int64(31)
	Pointer(tbl, &i1)
	if Pointer(tbl, &i2) != &i1 || Pointer(tbl, &i3) != &i3 {
		t.Error("pointers not shared by value")
	}
	n1 := int32(30)
	if Pointer(tbl, &n1) != &n1 {
		t.Error("a pointer to an int32 was shared with one to an equal int64")
	}
}
