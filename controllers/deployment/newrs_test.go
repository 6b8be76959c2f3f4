package deployment

import (
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var t0 = time.Unix(1e9, 0)

// withTemplate gives d a selector, a template and a uid, as the API
// server would.
func withTemplate(d *appsv1.Deployment) *appsv1.Deployment {
	d.UID, d.Namespace = "d-uid", "ns"
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	d.Spec.Template = corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	return d
}

func withRevision(r *appsv1.ReplicaSet, revision string) *appsv1.ReplicaSet {
	r.Annotations = map[string]string{RevisionAnnotation: revision}
	return r
}

func TestNewRSRevision(t *testing.T) {
	tests := []struct {
		name string
		old  []*appsv1.ReplicaSet
		want string
	}{
		{"first rollout", nil, "1"},
		{"one above the highest old revision", []*appsv1.ReplicaSet{withRevision(rs("a", 0, 0, 0), "3"), withRevision(rs("b", 0, 0, 0), "7")}, "8"},
		{"an old one without revision counts 0", []*appsv1.ReplicaSet{rs("a", 0, 0, 0)}, "1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := NewRSRevision(tc.old); got != tc.want {
				t.Fatalf("= %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNewReplicaSetIsNamedAndSelectedByItsHash(t *testing.T) {
	tests := []struct {
		name      string
		collision *int32
		replicas  int32
		old       []*appsv1.ReplicaSet
		wantSize  int32
	}{
		{"first rollout takes replicas within surge", nil, 4, nil, 4},
		{"a collision count moves the hash", ptr.To[int32](1), 4, nil, 4},
		{"old pods leave room for the surge only", nil, 4, []*appsv1.ReplicaSet{rs("old", time.Hour, 4, 4)}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := withTemplate(dep(tc.replicas, "25%", "25%"))
			d.Status.CollisionCount = tc.collision
			got := NewReplicaSet(d, tc.old, "2")
			hash := ComputeHash(&d.Spec.Template, tc.collision)
			if got.Name != "d-"+hash || got.Labels[HashLabel] != hash || got.Spec.Template.Labels[HashLabel] != hash ||
				got.Spec.Selector.MatchLabels[HashLabel] != hash || got.Spec.Selector.MatchLabels["app"] != "web" {
				t.Errorf("name %q, labels %v, template labels %v, selector %v; want hash %s everywhere", got.Name, got.Labels, got.Spec.Template.Labels, got.Spec.Selector, hash)
			}
			if _, ok := d.Spec.Template.Labels[HashLabel]; ok {
				t.Error("the Deployment's own template got the hash label")
			}
			if *got.Spec.Replicas != tc.wantSize {
				t.Errorf("replicas %d, want %d", *got.Spec.Replicas, tc.wantSize)
			}
			if ref := metav1.GetControllerOf(got); ref == nil || ref.UID != d.UID || ref.Kind != "Deployment" {
				t.Errorf("controller %v, want the Deployment", ref)
			}
			if got.Annotations[RevisionAnnotation] != "2" || got.Annotations[DesiredReplicasAnnotation] != "4" || got.Annotations[MaxReplicasAnnotation] != "5" {
				t.Errorf("annotations %v", got.Annotations)
			}
		})
	}
	a, b := NewReplicaSet(withTemplate(dep(1, "1", "0")), nil, "1"), NewReplicaSet(func() *appsv1.Deployment {
		d := withTemplate(dep(1, "1", "0"))
		d.Status.CollisionCount = ptr.To[int32](1)
		return d
	}(), nil, "1")
	if a.Name == b.Name {
		t.Errorf("collision count 1 keeps the name %s", a.Name)
	}
}

func TestUpdatedNewRS(t *testing.T) {
	current := func() *appsv1.ReplicaSet {
		r := withRevision(rs("d-abc", 0, 1, 1), "2")
		return r
	}
	tests := []struct {
		name        string
		mutate      func(d *appsv1.Deployment, r *appsv1.ReplicaSet)
		revision    string
		wantChanged bool
		check       func(t *testing.T, r *appsv1.ReplicaSet)
	}{
		{"up to date", nil, "2", false, nil},
		{"a lower revision is raised and kept in the history", nil, "3", true, func(t *testing.T, r *appsv1.ReplicaSet) {
			if r.Annotations[RevisionAnnotation] != "3" || r.Annotations[RevisionHistoryAnnotation] != "2" {
				t.Errorf("annotations %v", r.Annotations)
			}
		}},
		{"minReadySeconds follows the Deployment", func(d *appsv1.Deployment, _ *appsv1.ReplicaSet) { d.Spec.MinReadySeconds = 5 }, "2", true, func(t *testing.T, r *appsv1.ReplicaSet) {
			if r.Spec.MinReadySeconds != 5 {
				t.Errorf("minReadySeconds %d", r.Spec.MinReadySeconds)
			}
		}},
		{"the Deployment's annotations are copied, not its bookkeeping", func(d *appsv1.Deployment, _ *appsv1.ReplicaSet) {
			d.Annotations = map[string]string{"team": "a", RevisionAnnotation: "9", annotationKubectlApply: "{}"}
		}, "2", true, func(t *testing.T, r *appsv1.ReplicaSet) {
			if r.Annotations["team"] != "a" || r.Annotations[RevisionAnnotation] != "2" || r.Annotations[annotationKubectlApply] != "" {
				t.Errorf("annotations %v", r.Annotations)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, existing := withTemplate(dep(1, "1", "0")), current()
			if tc.mutate != nil {
				tc.mutate(d, existing)
			}
			got, changed := UpdatedNewRS(d, existing, tc.revision)
			if changed != tc.wantChanged {
				t.Fatalf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if tc.check != nil {
				tc.check(t, got)
			}
			if existing.Annotations[RevisionAnnotation] != "2" {
				t.Error("the cached ReplicaSet was modified")
			}
		})
	}
}

func TestNewRSConditions(t *testing.T) {
	tests := []struct {
		name       string
		record     func(d *appsv1.Deployment) bool
		deadline   bool
		wantWrite  bool
		wantReason string
		wantStatus corev1.ConditionStatus
		wantRev    string
	}{
		{"found: revision and FoundNewReplicaSet", func(d *appsv1.Deployment) bool {
			return FoundNewRS(d, withRevision(rs("d-abc", 0, 1, 1), "4"), t0)
		}, true, true, ReasonFoundNewRS, corev1.ConditionTrue, "4"},
		{"found without a progress deadline: revision only", func(d *appsv1.Deployment) bool {
			return FoundNewRS(d, withRevision(rs("d-abc", 0, 1, 1), "4"), t0)
		}, false, true, "", "", "4"},
		{"created: revision and NewReplicaSetCreated", func(d *appsv1.Deployment) bool {
			CreatedNewRS(d, "d-abc", "5", t0)
			return true
		}, true, true, ReasonNewRSCreated, corev1.ConditionTrue, "5"},
		{"failed: ReplicaSetCreateError", func(d *appsv1.Deployment) bool {
			msg, write := FailedNewRS(d, "d-abc", errors.New("quota"), t0)
			return write && msg == `Failed to create new replica set "d-abc": quota`
		}, true, true, ReasonFailedRSCreate, corev1.ConditionFalse, ""},
		{"failed without a progress deadline: nothing to write", func(d *appsv1.Deployment) bool {
			_, write := FailedNewRS(d, "d-abc", errors.New("quota"), t0)
			return write
		}, false, false, "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := withTemplate(dep(1, "1", "0"))
			if !tc.deadline {
				d.Spec.ProgressDeadlineSeconds = nil
			}
			if write := tc.record(d); write != tc.wantWrite {
				t.Fatalf("write = %v, want %v", write, tc.wantWrite)
			}
			c := Condition(&d.Status, appsv1.DeploymentProgressing)
			switch {
			case tc.wantReason == "" && c != nil:
				t.Errorf("condition %+v, want none", c)
			case tc.wantReason != "" && (c == nil || c.Reason != tc.wantReason || c.Status != tc.wantStatus):
				t.Errorf("condition %+v, want %s %s", c, tc.wantStatus, tc.wantReason)
			}
			if d.Annotations[RevisionAnnotation] != tc.wantRev {
				t.Errorf("revision %q, want %q", d.Annotations[RevisionAnnotation], tc.wantRev)
			}
		})
	}
}

func TestOwnNewRSAndCollisions(t *testing.T) {
	d := withTemplate(dep(1, "1", "0"))
	ours := NewReplicaSet(d, nil, "1")
	other := ours.DeepCopy()
	other.OwnerReferences[0].UID = "someone-else"
	changed := ours.DeepCopy()
	changed.Spec.Template.Spec.Containers[0].Image = "httpd"
	tests := []struct {
		name string
		got  *appsv1.ReplicaSet
		want bool
	}{
		{"ours, made by an earlier pass", ours, true},
		{"another owner's: a collision", other, false},
		{"ours but another template: a collision", changed, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := OwnNewRS(d, tc.got); got != tc.want {
				t.Fatalf("= %v, want %v", got, tc.want)
			}
		})
	}
	if n := RaiseCollisionCount(d); n != 1 || *d.Status.CollisionCount != 1 {
		t.Errorf("first collision: %d", n)
	}
	if n := RaiseCollisionCount(d); n != 2 {
		t.Errorf("second collision: %d", n)
	}
}
