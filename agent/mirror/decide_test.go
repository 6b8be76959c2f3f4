package mirror

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kite-project/kite/agent/kubetypes"
)

// static is a static pod named name-node1 in default, of content hash.
func static(name, hash string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name + "-node1", Namespace: "default", UID: types.UID(hash),
			Labels: map[string]string{"app": name},
			Annotations: map[string]string{
				kubetypes.ConfigHashAnnotationKey:   hash,
				kubetypes.ConfigSourceAnnotationKey: kubetypes.FileSource,
			},
		},
		Spec: v1.PodSpec{NodeName: "node1", Containers: []v1.Container{{Name: "main", Image: "image"}}},
	}
}

// mirrorPod is a mirror of name-node1 carrying hash, with API UID uid.
func mirrorPod(name, hash, uid string, mutate ...func(*v1.Pod)) *v1.Pod {
	p := NewMirrorPod(static(name, hash), "node1", "node-uid")
	p.UID = types.UID(uid)
	for _, m := range mutate {
		m(p)
	}
	return p
}

func terminating(p *v1.Pod) {
	now := metav1.Now()
	p.DeletionTimestamp = &now
}

// describe renders actions as "op name uid reason".
func describe(actions []Action) []string {
	out := []string{}
	for _, a := range actions {
		out = append(out, fmt.Sprintf("%s %s %s %s", a.Op, a.Pod.Name, a.Pod.UID, a.Reason))
	}
	return out
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want []string
	}{
		{
			name: "nothing before the api source reports",
			in:   Input{Static: []*v1.Pod{static("a", "h1")}, StaticSeen: true},
			want: []string{},
		},
		{
			name: "a static pod without mirror gets one",
			in:   Input{Static: []*v1.Pod{static("a", "h1")}, APISeen: true, StaticSeen: true},
			want: []string{"create a-node1 h1 missing"},
		},
		{
			name: "a mirror of the current hash is left alone",
			in:   Input{Static: []*v1.Pod{static("a", "h1")}, Mirrors: []*v1.Pod{mirrorPod("a", "h1", "m1")}, APISeen: true, StaticSeen: true},
			want: []string{},
		},
		{
			name: "a mirror edited by hand but of the current hash is left alone",
			in: Input{Static: []*v1.Pod{static("a", "h1")}, APISeen: true, StaticSeen: true,
				Mirrors: []*v1.Pod{mirrorPod("a", "h1", "m1", func(p *v1.Pod) { p.Spec.Containers[0].Image = "other" })}},
			want: []string{},
		},
		{
			name: "an outdated mirror is deleted then created again",
			in:   Input{Static: []*v1.Pod{static("a", "h2")}, Mirrors: []*v1.Pod{mirrorPod("a", "h1", "m1")}, APISeen: true, StaticSeen: true},
			want: []string{"delete a-node1 m1 outdated", "create a-node1 h2 outdated"},
		},
		{
			name: "a mirror deleted through the API is deleted at once and created again",
			in:   Input{Static: []*v1.Pod{static("a", "h1")}, Mirrors: []*v1.Pod{mirrorPod("a", "h1", "m1", terminating)}, APISeen: true, StaticSeen: true},
			want: []string{"delete a-node1 m1 terminating", "create a-node1 h1 terminating"},
		},
		{
			name: "a mirror whose static pod is gone is deleted",
			in:   Input{Mirrors: []*v1.Pod{mirrorPod("a", "h1", "m1")}, APISeen: true, StaticSeen: true},
			want: []string{"delete a-node1 m1 orphaned"},
		},
		{
			name: "an orphan is kept until every static source has reported",
			in:   Input{Mirrors: []*v1.Pod{mirrorPod("a", "h1", "m1")}, APISeen: true},
			want: []string{},
		},
		{
			name: "mirrors are still created before every static source has reported",
			in:   Input{Static: []*v1.Pod{static("b", "h2")}, Mirrors: []*v1.Pod{mirrorPod("a", "h1", "m1")}, APISeen: true},
			want: []string{"create b-node1 h2 missing"},
		},
		{
			name: "several pods in name order",
			in: Input{
				Static:  []*v1.Pod{static("c", "h3"), static("a", "h1"), static("b", "h2")},
				Mirrors: []*v1.Pod{mirrorPod("d", "h4", "m4"), mirrorPod("b", "h0", "m2"), mirrorPod("a", "h1", "m1")},
				APISeen: true, StaticSeen: true,
			},
			want: []string{"delete b-node1 m2 outdated", "create b-node1 h2 outdated", "create c-node1 h3 missing", "delete d-node1 m4 orphaned"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := describe(Decide(tc.in)); !slices.Equal(got, tc.want) {
				t.Errorf("Decide:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestNewMirrorPodIsTheStaticPodOwnedByTheNode(t *testing.T) {
	s := static("a", "h1")
	s.Status.Phase = v1.PodRunning
	m := NewMirrorPod(s, "node1", "node-uid")

	if m.Name != s.Name || m.Namespace != s.Namespace || m.Labels["app"] != "a" {
		t.Errorf("mirror %s/%s labels %v, want the static pod's name, namespace and labels", m.Namespace, m.Name, m.Labels)
	}
	if got := m.Annotations[kubetypes.ConfigMirrorAnnotationKey]; got != "h1" {
		t.Errorf("mirror annotation = %q, want the static pod's hash h1", got)
	}
	if got := m.Annotations[kubetypes.ConfigHashAnnotationKey]; got != "h1" {
		t.Errorf("hash annotation = %q, want h1 (copied)", got)
	}
	if !kubetypes.IsMirrorPod(m) || !IsMirrorOf(m, s) {
		t.Error("the new mirror is not recognised as the static pod's mirror")
	}
	if m.UID != "" || m.ResourceVersion != "" || m.Status.Phase != "" {
		t.Errorf("mirror carries UID %q, resourceVersion %q or phase %q; the API server sets them", m.UID, m.ResourceVersion, m.Status.Phase)
	}
	want := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "node1", UID: "node-uid"}
	if len(m.OwnerReferences) != 1 {
		t.Fatalf("ownerReferences = %v, want one to the Node", m.OwnerReferences)
	}
	got := m.OwnerReferences[0]
	if got.APIVersion != want.APIVersion || got.Kind != want.Kind || got.Name != want.Name || got.UID != want.UID || got.Controller == nil || !*got.Controller {
		t.Errorf("ownerReference = %+v, want %+v with controller true", got, want)
	}

	// The copy is deep: changing it leaves the static pod as it was.
	m.Annotations["x"] = "y"
	m.Labels["x"] = "y"
	m.Spec.Containers[0].Image = "changed"
	if _, ok := s.Annotations[kubetypes.ConfigMirrorAnnotationKey]; ok || s.Labels["x"] != "" || s.Spec.Containers[0].Image != "image" {
		t.Error("NewMirrorPod shares maps or spec with the static pod")
	}
}

func TestIsMirrorOf(t *testing.T) {
	tests := []struct {
		name   string
		mirror *v1.Pod
		want   bool
	}{
		{"same name and hash", mirrorPod("a", "h1", "m"), true},
		{"other hash", mirrorPod("a", "h2", "m"), false},
		{"other name", mirrorPod("b", "h1", "m"), false},
		{"no mirror annotation", mirrorPod("a", "h1", "m", func(p *v1.Pod) { delete(p.Annotations, kubetypes.ConfigMirrorAnnotationKey) }), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsMirrorOf(tc.mirror, static("a", "h1")); got != tc.want {
				t.Errorf("IsMirrorOf = %v, want %v", got, tc.want)
			}
		})
	}
}
