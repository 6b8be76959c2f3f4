package config

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kite-project/kite/agent/kubetypes"
)

const (
	file = kubetypes.FileSource
	http = kubetypes.HTTPSource
	api  = kubetypes.APISource
)

var now = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// pod builds a pod "name/uid" in namespace default, changed by the mutators.
func pod(name, uid string, mutate ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(uid)},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "image"}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func withImage(image string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.Containers[0].Image = image }
}
func withLabel(k, v string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Labels = map[string]string{k: v} }
}
func withAnnotation(k, v string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}
func withPhase(phase v1.PodPhase) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Status.Phase = phase }
}
func withNamespace(ns string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Namespace = ns }
}
func withResourceVersion(rv string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.ResourceVersion = rv }
}
func deleting(grace int64) func(*v1.Pod) {
	return func(p *v1.Pod) {
		t := metav1.NewTime(now)
		p.DeletionTimestamp = &t
		p.DeletionGracePeriodSeconds = &grace
	}
}
func mirror(p *v1.Pod) { withAnnotation(kubetypes.ConfigMirrorAnnotationKey, "hash")(p) }

func set(source string, pods ...*v1.Pod) kubetypes.PodUpdate {
	return kubetypes.PodUpdate{Op: kubetypes.SET, Source: source, Pods: pods}
}
func input(op kubetypes.Op, source string, pods ...*v1.Pod) kubetypes.PodUpdate {
	return kubetypes.PodUpdate{Op: op, Source: source, Pods: pods}
}

// describe renders updates as "OP source name/uid,...", one per update.
func describe(updates []kubetypes.PodUpdate) []string {
	var out []string
	for _, u := range updates {
		var pods []string
		for _, p := range u.Pods {
			name := p.Name
			if p.Namespace != "default" {
				name = p.Namespace + "." + name
			}
			pods = append(pods, name+"/"+string(p.UID))
		}
		out = append(out, fmt.Sprintf("%s %s [%s]", u.Op, u.Source, strings.Join(pods, ",")))
	}
	return out
}

type step struct {
	in       kubetypes.PodUpdate
	want     []string // describe() of the updates
	problems int      // number of problems reported
}

func TestMerge(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{{
		name: "worked example: first empty, add, same, status, replace, label, delete, remove",
		steps: []step{
			{in: set(api), want: []string{"ADD api []"}},
			{in: set(api, pod("a", "1"), pod("b", "2")), want: []string{"ADD api [a/1,b/2]"}},
			{in: set(api, pod("a", "1"), pod("b", "2"))},
			{in: set(api, pod("a", "1", withPhase(v1.PodRunning)), pod("b", "2")), want: []string{"RECONCILE api [a/1]"}},
			{in: set(api, pod("a", "3"), pod("b", "2")), want: []string{"REMOVE api [a/1]", "ADD api [a/3]"}},
			{in: set(api, pod("a", "3", withLabel("k", "v")), pod("b", "2")), want: []string{"UPDATE api [a/3]"}},
			{in: set(api, pod("a", "3", withLabel("k", "v"), deleting(30)), pod("b", "2")), want: []string{"DELETE api [a/3]"}},
			{in: set(api, pod("b", "2")), want: []string{"REMOVE api [a/3]"}},
		},
	}, {
		name: "one snapshot with every operation emits REMOVE, ADD, UPDATE, DELETE, RECONCILE in order",
		steps: []step{
			{in: set(file, pod("gone", "1"), pod("upd", "2"), pod("del", "3"), pod("rec", "4")), want: []string{"ADD file [gone/1,upd/2,del/3,rec/4]"}},
			{in: set(file, pod("rec", "4", withPhase(v1.PodRunning)), pod("del", "3", deleting(10)), pod("upd", "2", withImage("v2")), pod("new", "5")),
				want: []string{"REMOVE file [gone/1]", "ADD file [new/5]", "UPDATE file [upd/2]", "DELETE file [del/3]", "RECONCILE file [rec/4]"}},
		},
	}, {
		name: "first empty snapshot emits an empty ADD, later empty snapshots nothing",
		steps: []step{
			{in: set(file), want: []string{"ADD file []"}},
			{in: set(file)},
		},
	}, {
		name: "first snapshot with pods emits only their ADD",
		steps: []step{
			{in: set(http, pod("a", "1")), want: []string{"ADD http [a/1]"}},
		},
	}, {
		name: "spec and status change gives UPDATE only",
		steps: []step{
			{in: set(api, pod("a", "1")), want: []string{"ADD api [a/1]"}},
			{in: set(api, pod("a", "1", withImage("v2"), withPhase(v1.PodRunning))), want: []string{"UPDATE api [a/1]"}},
		},
	}, {
		name: "non-agent annotations added, changed and removed give UPDATE",
		steps: []step{
			{in: set(api, pod("a", "1")), want: []string{"ADD api [a/1]"}},
			{in: set(api, pod("a", "1", withAnnotation("x", "1"))), want: []string{"UPDATE api [a/1]"}},
			{in: set(api, pod("a", "1", withAnnotation("x", "2"))), want: []string{"UPDATE api [a/1]"}},
			{in: set(api, pod("a", "1")), want: []string{"UPDATE api [a/1]"}},
		},
	}, {
		name: "agent annotations, resourceVersion alone give nothing",
		steps: []step{
			{in: set(api, pod("a", "1")), want: []string{"ADD api [a/1]"}},
			{in: set(api, pod("a", "1", withAnnotation(kubetypes.ConfigFirstSeenAnnotationKey, "yesterday"), withAnnotation(kubetypes.ConfigSourceAnnotationKey, "http")))},
			{in: set(api, pod("a", "1", withResourceVersion("42")))},
		},
	}, {
		name: "label change gives UPDATE",
		steps: []step{
			{in: set(api, pod("a", "1", withLabel("app", "x"))), want: []string{"ADD api [a/1]"}},
			{in: set(api, pod("a", "1", withLabel("app", "y"))), want: []string{"UPDATE api [a/1]"}},
		},
	}, {
		name: "shortened grace period while deleting gives DELETE again",
		steps: []step{
			{in: set(api, pod("a", "1")), want: []string{"ADD api [a/1]"}},
			{in: set(api, pod("a", "1", deleting(30))), want: []string{"DELETE api [a/1]"}},
			{in: set(api, pod("a", "1", deleting(30)))},
			{in: set(api, pod("a", "1", deleting(0))), want: []string{"DELETE api [a/1]"}},
		},
	}, {
		name: "pod first seen already deleting is an ADD",
		steps: []step{
			{in: set(api, pod("a", "1", deleting(30))), want: []string{"ADD api [a/1]"}},
		},
	}, {
		name: "same name in two namespaces gives two pods",
		steps: []step{
			{in: set(api, pod("a", "1"), pod("a", "2", withNamespace("other"))), want: []string{"ADD api [a/1,other.a/2]"}},
		},
	}, {
		name: "duplicate full name in one snapshot: first wins, reported once while it lasts",
		steps: []step{
			{in: set(http, pod("a", "1"), pod("a", "2")), want: []string{"ADD http [a/1]"}, problems: 1},
			{in: set(http, pod("a", "1"), pod("a", "2"), pod("b", "3")), want: []string{"ADD http [b/3]"}},
			{in: set(http, pod("a", "1"), pod("b", "3"))},
			{in: set(http, pod("a", "1"), pod("a", "2"), pod("b", "3")), problems: 1},
		},
	}, {
		name: "duplicate UID in one snapshot: first wins",
		steps: []step{
			{in: set(http, pod("a", "1"), pod("b", "1")), want: []string{"ADD http [a/1]"}, problems: 1},
		},
	}, {
		name: "full name claimed by two sources is kept from the first, the other gets it when released",
		steps: []step{
			{in: set(file, pod("x", "f1")), want: []string{"ADD file [x/f1]"}},
			{in: set(http, pod("x", "h1"), pod("y", "h2")), want: []string{"ADD http [y/h2]"}, problems: 1},
			{in: set(http, pod("x", "h1"), pod("y", "h2"))},
			{in: set(file, pod("x", "f2", withImage("v2"))), want: []string{"REMOVE file [x/f1]", "ADD file [x/f2]"}},
			{in: set(file), want: []string{"REMOVE file [x/f2]", "ADD http [x/h1]"}},
			{in: set(file, pod("x", "f3")), problems: 1},
		},
	}, {
		name: "UID claimed by two sources under different names is kept from the first; the other's REMOVE cannot reach it",
		steps: []step{
			{in: set(file, pod("x", "u1")), want: []string{"ADD file [x/u1]"}},
			{in: set(http, pod("y", "u1"), pod("z", "h2")), want: []string{"ADD http [z/h2]"}, problems: 1},
			{in: set(http, pod("y", "u1"), pod("z", "h2"))},
			{in: input(kubetypes.REMOVE, http, pod("y", "u1"))},
			{in: input(kubetypes.ADD, http, pod("y", "u1")), problems: 1},
			{in: set(file), want: []string{"REMOVE file [x/u1]", "ADD http [y/u1]"}},
			{in: set(file, pod("x", "u1")), problems: 1},
			{in: input(kubetypes.REMOVE, http, pod("y", "u1")), want: []string{"REMOVE http [y/u1]", "ADD file [x/u1]"}},
		},
	}, {
		name: "mirror pod with a static pod's name passes through",
		steps: []step{
			{in: set(file, pod("x-node", "f1")), want: []string{"ADD file [x-node/f1]"}},
			{in: set(api, pod("x-node", "m1", mirror)), want: []string{"ADD api [x-node/m1]"}},
		},
	}, {
		name: "incremental inputs ADD, UPDATE, DELETE upsert and REMOVE removes",
		steps: []step{
			{in: input(kubetypes.ADD, api, pod("a", "1")), want: []string{"ADD api [a/1]"}},
			{in: input(kubetypes.ADD, api, pod("a", "1"))},
			{in: input(kubetypes.UPDATE, api, pod("a", "1", withImage("v2")), pod("b", "2")), want: []string{"ADD api [b/2]", "UPDATE api [a/1]"}},
			{in: input(kubetypes.DELETE, api, pod("b", "2", deleting(5))), want: []string{"DELETE api [b/2]"}},
			{in: input(kubetypes.REMOVE, api, pod("a", "1"), pod("unknown", "9")), want: []string{"REMOVE api [a/1]"}},
			{in: set(api, pod("b", "2", deleting(5))), want: []string{"ADD api []"}},
		},
	}, {
		name: "an output operation as input is refused",
		steps: []step{
			{in: input(kubetypes.RECONCILE, api, pod("a", "1")), problems: 1},
		},
	}, {
		name: "an update without source is refused",
		steps: []step{
			{in: input(kubetypes.SET, "", pod("a", "1")), problems: 1},
		},
	}, {
		name: "sources are independent: an unseen source blocks no other source's removal",
		steps: []step{
			{in: set(file, pod("a", "1"), pod("b", "2")), want: []string{"ADD file [a/1,b/2]"}},
			{in: set(file, pod("b", "2")), want: []string{"REMOVE file [a/1]"}},
			{in: set(http, pod("c", "3")), want: []string{"ADD http [c/3]"}},
			{in: set(http), want: []string{"REMOVE http [c/3]"}},
			{in: set(file, pod("b", "2"))},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var st State
			for i, s := range tc.steps {
				var res Result
				st, res = Merge(st, s.in, now)
				if got := describe(res.Updates); !reflect.DeepEqual(got, s.want) {
					t.Fatalf("step %d: updates\n got %q\nwant %q", i, got, s.want)
				}
				if len(res.Problems) != s.problems {
					t.Fatalf("step %d: problems %v, want %d", i, res.Problems, s.problems)
				}
			}
		})
	}
}

func TestMergeAnnotatesSourceAndFirstSeen(t *testing.T) {
	st, res := Merge(State{}, set(file, pod("a", "1")), now)
	got := res.Updates[0].Pods[0]
	if got.Annotations[kubetypes.ConfigSourceAnnotationKey] != file {
		t.Errorf("config.source = %q, want file", got.Annotations[kubetypes.ConfigSourceAnnotationKey])
	}
	seen := now.Format(time.RFC3339Nano)
	if got.Annotations[kubetypes.ConfigFirstSeenAnnotationKey] != seen {
		t.Errorf("config.seen = %q, want %q", got.Annotations[kubetypes.ConfigFirstSeenAnnotationKey], seen)
	}
	_, res = Merge(st, set(file, pod("a", "1", withImage("v2"), withAnnotation("x", "y"))), now.Add(time.Hour))
	got = res.Updates[0].Pods[0]
	if got.Annotations[kubetypes.ConfigFirstSeenAnnotationKey] != seen || got.Annotations["x"] != "y" ||
		got.Annotations[kubetypes.ConfigSourceAnnotationKey] != file || got.Spec.Containers[0].Image != "v2" {
		t.Errorf("updated pod annotations %v image %q: want first-seen kept, x=y, source file, image v2",
			got.Annotations, got.Spec.Containers[0].Image)
	}
}

func TestMergeIsPure(t *testing.T) {
	st, _ := Merge(State{}, set(file, pod("a", "1"), pod("b", "2")), now)
	in := set(file, pod("a", "1", withImage("v2")), pod("c", "3"))
	before := in.Pods[0].DeepCopy()
	_, first := Merge(st, in, now)
	_, second := Merge(st, in, now)
	if !reflect.DeepEqual(describe(first.Updates), describe(second.Updates)) {
		t.Fatalf("same state and input gave %q then %q", describe(first.Updates), describe(second.Updates))
	}
	if !reflect.DeepEqual(in.Pods[0], before) {
		t.Errorf("Merge modified its input pod: %+v", in.Pods[0])
	}
	if got := len(st.Pods()); got != 2 {
		t.Errorf("previous state has %d pods after merges from it, want 2", got)
	}
	first.Updates[0].Pods[0].Name = "mutated by consumer"
	if st.Pods()[0].Name != "a" {
		t.Errorf("consumer's change to an emitted pod reached the state")
	}
}

func TestStateSeen(t *testing.T) {
	var st State
	if st.Seen(file) || st.SeenAll(file) {
		t.Fatal("empty state has seen file")
	}
	if !st.SeenAll() {
		t.Fatal("SeenAll of no sources is false")
	}
	st, _ = Merge(st, input(kubetypes.ADD, file, pod("a", "1")), now)
	if st.Seen(file) {
		t.Fatal("an incremental ADD marked the source seen; only a SET does")
	}
	st, _ = Merge(st, set(file), now)
	if !st.Seen(file) || st.SeenAll(file, api) || !st.SeenAll(file) {
		t.Fatalf("after file's SET: Seen(file)=%v SeenAll(file, api)=%v", st.Seen(file), st.SeenAll(file, api))
	}
}
