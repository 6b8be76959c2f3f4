package listwatch

import (
	"errors"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestUndeltaStorePushesTheWholeSetAfterEachSuccessfulWrite(t *testing.T) {
	var pushes [][]string
	u := NewUndeltaStore(UndeltaOptions[*v1.Pod]{Push: func(pods []*v1.Pod) { pushes = append(pushes, names(pods)) }})
	steps := []struct {
		name  string
		write func() error
		want  [][]string // pushes after this step
	}{
		{"an empty replace still pushes", func() error { return u.Replace(nil, "1") }, [][]string{{}}},
		{"add", func() error { return u.Add(testPod("ns", "b", "2", "n1")) }, [][]string{{"ns/b"}}},
		{"add keeps key order", func() error { return u.Add(testPod("ns", "a", "3", "n1")) }, [][]string{{"ns/a", "ns/b"}}},
		{"update", func() error { return u.Update(testPod("ns", "a", "4", "n2")) }, [][]string{{"ns/a", "ns/b"}}},
		{"delete", func() error { return u.Delete(testPod("ns", "b", "5", "")) }, [][]string{{"ns/a"}}},
		{"a bookmark pushes nothing", func() error { u.UpdateResourceVersion("9"); return nil }, nil},
		{"a failed write pushes nothing", func() error {
			if err := u.Add(&v1.Pod{}); err == nil {
				return errors.New("add of a nameless pod succeeded")
			}
			return nil
		}, nil},
		{"replace", func() error {
			return u.Replace([]runtime.Object{testPod("ns", "z", "6", ""), testPod("ns", "y", "6", "")}, "10")
		}, [][]string{{"ns/y", "ns/z"}}},
	}
	for _, st := range steps {
		pushes = nil
		if err := st.write(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if !slices.EqualFunc(pushes, st.want, slices.Equal) {
			t.Fatalf("%s: pushes %q, want %q", st.name, pushes, st.want)
		}
	}
	if u.Indexer().ResourceVersion() != "10" {
		t.Fatalf("rv %q", u.Indexer().ResourceVersion())
	}
}
