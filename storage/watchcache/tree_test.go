package watchcache

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func el(key string, rv uint64) *element { return &element{key: key, rv: rv} }

// keysOf walks t in order.
func keysOf(t tree) []string {
	var keys []string
	t.Ascend("", func(e *element) bool { keys = append(keys, e.key); return true })
	return keys
}

// TestTreeMatchesModel drives the tree and a sorted-map model with the same
// random puts and deletes and checks they agree after every step, and that
// old versions of the tree never change (snapshots are immutable).
func TestTreeMatchesModel(t *testing.T) {
	for _, size := range []int{10, 300, 5000} {
		t.Run(fmt.Sprintf("keys=%d", size), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(uint64(size), 7))
			model := map[string]uint64{}
			var tr tree
			type version struct {
				t    tree
				keys []string
			}
			var versions []version
			for step := range size * 4 {
				key := fmt.Sprintf("/pods/ns-%d/pod-%d", rnd.IntN(size/10+1), rnd.IntN(size))
				if rnd.IntN(3) == 0 {
					delete(model, key)
					tr = tr.Delete(key)
				} else {
					model[key] = uint64(step)
					tr = tr.Put(el(key, uint64(step)))
				}
				if step%(size/5+1) == 0 {
					versions = append(versions, version{t: tr, keys: keysOf(tr)})
				}
			}
			want := make([]string, 0, len(model))
			for k := range model {
				want = append(want, k)
			}
			slices.Sort(want)
			if got := keysOf(tr); !slices.Equal(got, want) {
				t.Fatalf("keys differ from the model: got %d keys, want %d", len(got), len(want))
			}
			if tr.Len() != len(want) {
				t.Fatalf("Len() = %d, want %d", tr.Len(), len(want))
			}
			for _, k := range want {
				if e := tr.Get(k); e == nil || e.rv != model[k] {
					t.Fatalf("Get(%q) = %v, want rv %d", k, e, model[k])
				}
			}
			for i, k := range want {
				if r := tr.Rank(k); r != i {
					t.Fatalf("Rank(%q) = %d, want %d", k, r, i)
				}
			}
			for i, v := range versions {
				if got := keysOf(v.t); !slices.Equal(got, v.keys) {
					t.Fatalf("version %d changed after later writes", i)
				}
			}
		})
	}
}

func TestTreePrefixWalksAndCounts(t *testing.T) {
	var sorted []*element
	for _, ns := range []string{"a", "ab", "b"} {
		for i := range 100 {
			sorted = append(sorted, el(fmt.Sprintf("/pods/%s/p%03d", ns, i), 1))
		}
	}
	built := buildTree(sorted)
	var put tree
	for _, e := range sorted {
		put = put.Put(e)
	}
	for name, tr := range map[string]tree{"built": built, "put": put} {
		tests := []struct {
			prefix, from string
			want         int
			first        string
		}{
			{prefix: "/pods/a/", want: 100, first: "/pods/a/p000"},
			{prefix: "/pods/a/", from: "/pods/a/p050\x00", want: 49, first: "/pods/a/p051"},
			{prefix: "/pods/ab/", want: 100, first: "/pods/ab/p000"},
			{prefix: "/pods/", want: 300, first: "/pods/a/p000"},
			{prefix: "/pods/c/", want: 0},
			{prefix: "/pods/b/", from: "/pods/a/p000", want: 100, first: "/pods/b/p000"},
		}
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/%s from %q", name, tt.prefix, tt.from), func(t *testing.T) {
				var got []string
				tr.AscendPrefix(tt.prefix, tt.from, func(e *element) bool { got = append(got, e.key); return true })
				if len(got) != tt.want {
					t.Fatalf("walked %d keys, want %d", len(got), tt.want)
				}
				for _, k := range got {
					if !strings.HasPrefix(k, tt.prefix) {
						t.Fatalf("walked %q outside %q", k, tt.prefix)
					}
				}
				if tt.want > 0 && got[0] != tt.first {
					t.Fatalf("first key %q, want %q", got[0], tt.first)
				}
				if n := tr.CountPrefix(tt.prefix, tt.from); n != tt.want {
					t.Fatalf("CountPrefix = %d, want %d", n, tt.want)
				}
			})
		}
	}
}

func TestTreeDeleteToEmpty(t *testing.T) {
	var tr tree
	for i := range 1000 {
		tr = tr.Put(el(fmt.Sprintf("k%04d", i), 1))
	}
	for i := range 1000 {
		tr = tr.Delete(fmt.Sprintf("k%04d", i))
	}
	if tr.Len() != 0 || tr.root != nil {
		t.Fatalf("tree not empty after deleting every key: len %d", tr.Len())
	}
	if tr.Delete("absent").Len() != 0 {
		t.Fatal("deleting from an empty tree changed it")
	}
}
