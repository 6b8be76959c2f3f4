package etcd

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
)

// FuzzGetList lists with fuzzed resourceVersion, resourceVersionMatch,
// continue token and limit, over a store whose history is partly
// compacted. A refused list is an API Status with a 4xx code or 504 (a
// revision etcd has not reached) or a storage error the registry maps to
// one, never a bare error (a 500); and an accepted list that is paged
// continues, token after token, through exactly the items an unpaged list
// at its resourceVersion has.
func FuzzGetList(f *testing.F) {
	ctx, s, client := testSetup(f)
	var revs []string
	for i, key := range []string{"a/p1", "a/p2", "b/p1", "b/p2", "b/p3", "c/p1"} {
		ns, name := key[:1], key[2:]
		out := &example.Pod{}
		if err := s.Create(ctx, "/pods/"+key, newPod(ns, name), out, 0); err != nil {
			f.Fatal(err)
		}
		revs = append(revs, out.ResourceVersion)
		if i == 2 {
			// Reads below this revision are Expired.
			rev, _ := strconv.ParseInt(out.ResourceVersion, 10, 64)
			if err := CompactTo(ctx, client.Client, rev); err != nil {
				f.Fatal(err)
			}
			waitFor(f, 30*time.Second, func() bool { return s.CompactRevision() >= rev })
		}
	}
	f.Add(revs[4], string(metav1.ResourceVersionMatchExact), "", int64(2))
	f.Add(revs[0], string(metav1.ResourceVersionMatchExact), "", int64(0))
	f.Add("0", "", "", int64(1))
	f.Add("", "", "", int64(1))
	// A real token, from a first page at the latest revision.
	first := &example.PodList{}
	if err := s.GetList(ctx, "/pods/", storage.ListOptions{Recursive: true, Predicate: page(1, "")}, first); err != nil {
		f.Fatal(err)
	}
	f.Add("", "", first.Continue, int64(2))

	f.Fuzz(func(t *testing.T, rv, match, cont string, limit int64) {
		list := &example.PodList{}
		opts := storage.ListOptions{Recursive: true, ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatch(match), Predicate: page(limit, cont)}
		err := s.GetList(ctx, "/pods/", opts, list)
		switch opts.ResourceVersionMatch {
		case "", metav1.ResourceVersionMatchExact, metav1.ResourceVersionMatchNotOlderThan:
		default:
			// The API server refuses other values (422) before storage sees
			// them; storage does what upstream's does with them (a bare
			// error, or nothing when there is no resourceVersion).
			return
		}
		if err != nil {
			requireListError(t, fmt.Sprintf("list %+v", opts), err)
			return
		}
		if _, err := strconv.ParseUint(list.ResourceVersion, 10, 64); err != nil {
			t.Fatalf("list %+v has resourceVersion %q", opts, list.ResourceVersion)
		}
		if cont != "" || list.Continue == "" {
			return
		}
		// Follow the tokens; the pages together are the whole list.
		got := names(list)
		for token := list.Continue; token != ""; {
			next := &example.PodList{}
			if err := s.GetList(ctx, "/pods/", storage.ListOptions{Recursive: true, Predicate: page(limit, token)}, next); err != nil {
				t.Fatalf("continue %q of list %+v: %v", token, opts, err)
			}
			if next.ResourceVersion != list.ResourceVersion {
				t.Fatalf("page at %s continues a list at %s", next.ResourceVersion, list.ResourceVersion)
			}
			got = append(got, names(next)...)
			token = next.Continue
		}
		whole := &example.PodList{}
		if err := s.GetList(ctx, "/pods/", storage.ListOptions{Recursive: true, ResourceVersion: list.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact, Predicate: page(0, "")}, whole); err != nil {
			t.Fatalf("whole list at %s: %v", list.ResourceVersion, err)
		}
		if want := names(whole); !reflect.DeepEqual(got, want) {
			t.Fatalf("pages of list %+v hold %v, the list at %s %v", opts, got, list.ResourceVersion, want)
		}
	})
}

func page(limit int64, cont string) storage.SelectionPredicate {
	p := storage.Everything
	p.Limit, p.Continue = limit, cont
	return p
}

func names(l *example.PodList) []string {
	out := make([]string, 0, len(l.Items))
	for _, p := range l.Items {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}

// requireListError fails unless err is what a client can be told: an API
// Status of 4xx or 504, or a storage error the registry turns into one.
func requireListError(t *testing.T, what string, err error) {
	t.Helper()
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if code := status.Status().Code; (code >= 400 && code <= 499) || code == 504 {
			return
		}
		t.Fatalf("%s: status %d: %v", what, status.Status().Code, err)
	}
	if storage.IsInvalidError(err) || storage.IsNotFound(err) {
		return
	}
	t.Fatalf("%s: a bare error (%T), which clients get as 500: %v", what, err, err)
}
