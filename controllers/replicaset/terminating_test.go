package replicaset_test

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/controllers/replicaset"
)

func TestTerminatingReplicasCountsClaimedPodsBeingDeleted(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "rs-uid"}}
	sel := labels.SelectorFromSet(labels.Set{"app": "web"})
	ours := []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}
	theirs := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "other", UID: "other-uid", Controller: ptr.To(true)}}
	notController := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: rs.UID}}
	deleting := ptr.To(metav1.Now())
	pod := func(owners []metav1.OwnerReference, app string, deletion *metav1.Time, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(app), OwnerReferences: owners, Labels: map[string]string{"app": app},
			DeletionTimestamp: deletion}, Status: corev1.PodStatus{Phase: phase}}
	}
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		want int32
	}{
		{"running, being deleted", pod(ours, "web", deleting, corev1.PodRunning), 1},
		{"pending, being deleted", pod(ours, "web", deleting, corev1.PodPending), 1},
		{"not being deleted", pod(ours, "web", nil, corev1.PodRunning), 0},
		{"succeeded while being deleted", pod(ours, "web", deleting, corev1.PodSucceeded), 0},
		{"failed while being deleted", pod(ours, "web", deleting, corev1.PodFailed), 0},
		{"another controller's", pod(theirs, "web", deleting, corev1.PodRunning), 0},
		{"owned but not controlled", pod(notController, "web", deleting, corev1.PodRunning), 0},
		{"an orphan", pod(nil, "web", deleting, corev1.PodRunning), 0},
		{"no longer matching the selector", pod(ours, "other", deleting, corev1.PodRunning), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := replicaset.TerminatingReplicas(rs, sel, []*corev1.Pod{c.pod}); got != c.want {
				t.Errorf("TerminatingReplicas = %d, want %d", got, c.want)
			}
		})
	}
}

// TestReplicaSetReportsTerminatingReplicas: pods the controller deleted
// that are still going (held by a finalizer here, by their grace period
// on a node) are replaced at once and counted in terminatingReplicas, not
// in replicas, until they are gone or finished.
func TestReplicaSetReportsTerminatingReplicas(t *testing.T) {
	cs, ns := start(t)
	ctx := context.Background()
	rs := newRS("held", 3)
	rs.Spec.Template.Finalizers = []string{"example.com/hold"}
	if _, err := cs.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	status := func(what string, replicas, terminating int32) {
		t.Helper()
		eventually(t, what, func(ctx context.Context) (bool, error) {
			got, err := cs.AppsV1().ReplicaSets(ns).Get(ctx, "held", metav1.GetOptions{})
			return err == nil && got.Status.ObservedGeneration == got.Generation && got.Status.Replicas == replicas &&
				ptr.Equal(got.Status.TerminatingReplicas, &terminating), err
		})
	}
	status("three replicas, none terminating", 3, 0)

	sc, err := cs.AppsV1().ReplicaSets(ns).GetScale(ctx, "held", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sc.Spec.Replicas = 1
	if _, err := cs.AppsV1().ReplicaSets(ns).UpdateScale(ctx, "held", sc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	status("scaled to one, two terminating", 1, 2)

	all, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var going []corev1.Pod
	for _, p := range all.Items {
		if p.DeletionTimestamp != nil {
			going = append(going, p)
		}
	}
	if len(going) != 2 {
		t.Fatalf("%d pods being deleted, want 2", len(going))
	}
	// One finishes (its node reports it failed): it is no longer
	// terminating although still there.
	going[0].Status.Phase = corev1.PodFailed
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, &going[0], metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	status("a terminating pod finished", 1, 1)

	for _, p := range all.Items {
		release(t, cs, ns, p.Name)
	}
	status("terminating pods gone", 1, 0)
}

// release removes a pod's finalizers.
func release(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	_, err := cs.CoreV1().Pods(ns).Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("release pod %s: %v", name, err)
	}
}
