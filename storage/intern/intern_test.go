package intern

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unsafe"
	"weak"

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
	for i := range 20 {
		tbl.Bytes([]byte(fmt.Sprintf("%040d", i)))
		if tbl.Held() > 100 {
			t.Fatalf("after %d values the table holds %d bytes of keys, budget 100", i+1, tbl.Held())
		}
	}
	big := []byte(strings.Repeat("x", 51)) // more than a generation
	if got := tbl.Bytes(big); !sameBytes(got, big) {
		t.Error("a value too big to keep did not come back unchanged")
	}
	if got := tbl.Bytes([]byte(strings.Repeat("x", 51))); sameBytes(got, big) {
		t.Error("a value too big to keep was kept")
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

// churn interns n values that nothing will ask for again, of every kind,
// as the deleted objects of a busy resource leave behind.
func churn(tbl *Table, round, n int) {
	for i := range n {
		v := fmt.Sprintf("gone-%d-%d", round, i)
		tbl.String(v)
		tbl.Bytes([]byte(v))
		tbl.Map(map[string]string{"id": v})
		tbl.ResourceList(corev1.ResourceList{corev1.ResourceName(v): resource.MustParse("1")})
	}
}

// TestValuesAfterChurnAreShared: once a table has taken in more values
// than its budget, of objects long gone, new values are still shared, as
// the first ones were (they were not, while the table kept every value
// it had ever admitted).
func TestValuesAfterChurnAreShared(t *testing.T) {
	tbl := New(Options{Budget: 4 << 10})
	for round := range 10 {
		churn(tbl, round, 100)
	}
	m1, m2 := map[string]string{"app": "new"}, map[string]string{"app": "new"}
	tbl.Map(m1)
	for i := range 2 * recent { // so that m2 is found by key
		tbl.Map(map[string]string{"other": fmt.Sprint(i)})
	}
	if got := tbl.Map(m2); !sameHeader(got, m1) {
		t.Error("a new map after churn is not shared")
	}
	s1, s2 := string([]byte("new-image:2.0")), string([]byte("new-image:2.0"))
	tbl.String(s1)
	if got := tbl.String(s2); unsafe.StringData(got) != unsafe.StringData(s1) {
		t.Error("a new string after churn is not shared")
	}
	b1, b2 := []byte(`{"f:new":{}}`), []byte(`{"f:new":{}}`)
	tbl.Bytes(b1)
	if got := tbl.Bytes(b2); !sameBytes(got, b1) {
		t.Error("new bytes after churn are not shared")
	}
	if tbl.Held() > 4<<10 {
		t.Errorf("the table holds %d bytes of keys, budget %d", tbl.Held(), 4<<10)
	}
}

// TestValuesInUseSurviveChurn: a value that objects keep arriving with,
// whether it is found among the recent values or by its key, stays the
// one canonical copy through any number of generations.
func TestValuesInUseSurviveChurn(t *testing.T) {
	tbl := New(Options{Budget: 4 << 10})
	labels := map[string]string{"app": "web"}
	image := string([]byte("web:1.0"))
	tbl.Map(labels)
	tbl.String(image)
	startGen := tbl.gen
	for round := range 50 {
		churn(tbl, round, 20)
		// The labels come back as a recent value (no map came in between
		// on even rounds), or by key after other maps (odd rounds).
		if round%2 == 1 {
			for i := range 2 * recent {
				tbl.Map(map[string]string{"other": fmt.Sprint(i)})
			}
		}
		if got := tbl.Map(map[string]string{"app": "web"}); !sameHeader(got, labels) {
			t.Fatalf("round %d: labels in use lost their canonical copy", round)
		}
		if got := tbl.String(string([]byte("web:1.0"))); unsafe.StringData(got) != unsafe.StringData(image) {
			t.Fatalf("round %d: an image in use lost its canonical copy", round)
		}
	}
	if tbl.gen-startGen < 10 {
		t.Fatalf("only %d generations went by; the test churns too little", tbl.gen-startGen)
	}
}

// TestUnusedValuesAreReleased: a value that no object has brought for two
// generations is no longer held by the table, so the garbage collector
// can take it once its objects are gone.
func TestUnusedValuesAreReleased(t *testing.T) {
	tbl := New(Options{Budget: 4 << 10})
	gone := []byte(`{"f:metadata":{"f:labels":{"f:deleted":{}}}}`)
	tbl.Bytes(gone)
	ptr := weak.Make(&gone[0])
	gone = nil
	for round := range 10 {
		churn(tbl, round, 100)
	}
	runtime.GC()
	if ptr.Value() != nil {
		t.Error("bytes no object has brought for ten generations are still reachable")
	}
	runtime.KeepAlive(tbl)
}
