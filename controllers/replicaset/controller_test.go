package replicaset_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/controllers/replicaset"
)

func start(t *testing.T) (kubernetes.Interface, string) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	rc, err := replicaset.New(replicaset.Options{Client: cs})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { rc.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "rs-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cs, ns.Name
}

func newRS(name string, replicas int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
}

func eventually(t *testing.T, what string, f func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 15*time.Second, true, f); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func podsOf(ctx context.Context, cs kubernetes.Interface, ns, app string) ([]corev1.Pod, error) {
	l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// markReady does what a node would: the pod runs and is Ready.
func markReady(t *testing.T, cs kubernetes.Interface, p *corev1.Pod) {
	t.Helper()
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if _, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestReplicaSetCreatesScalesAndReportsStatus(t *testing.T) {
	cs, ns := start(t)
	rs, err := cs.AppsV1().ReplicaSets(ns).Create(context.Background(), newRS("web", 3), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pods []corev1.Pod
	eventually(t, "three pods", func(ctx context.Context) (bool, error) {
		pods, err = podsOf(ctx, cs, ns, "web")
		return len(pods) == 3, err
	})
	for _, p := range pods {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.UID != rs.UID || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion || p.GenerateName != "web-" {
			t.Errorf("pod %s: controller %+v generateName %q", p.Name, ref, p.GenerateName)
		}
	}
	// Two pods turn ready; scaling to 2 deletes the one that is not.
	markReady(t, cs, &pods[0])
	markReady(t, cs, &pods[1])
	eventually(t, "status counts the ready pods", func(ctx context.Context) (bool, error) {
		got, err := cs.AppsV1().ReplicaSets(ns).Get(ctx, "web", metav1.GetOptions{})
		s := got.Status
		return err == nil && s.Replicas == 3 && s.ReadyReplicas == 2 && s.AvailableReplicas == 2 && s.FullyLabeledReplicas == 3 && s.ObservedGeneration == got.Generation, err
	})
	sc, err := cs.AppsV1().ReplicaSets(ns).GetScale(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sc.Spec.Replicas = 2
	if _, err := cs.AppsV1().ReplicaSets(ns).UpdateScale(context.Background(), "web", sc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pod that is not ready deleted", func(ctx context.Context) (bool, error) {
		left, err := podsOf(ctx, cs, ns, "web")
		if err != nil || len(left) != 2 {
			return false, err
		}
		names := []string{left[0].Name, left[1].Name}
		return slices.Contains(names, pods[0].Name) && slices.Contains(names, pods[1].Name), nil
	})
	eventually(t, "status observes the new generation", func(ctx context.Context) (bool, error) {
		got, err := cs.AppsV1().ReplicaSets(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && got.Status.Replicas == 2 && got.Status.ObservedGeneration == got.Generation && got.Generation == 2, err
	})
}

func TestReplicaSetAdoptsAndReleases(t *testing.T) {
	cs, ns := start(t)
	// The controller may see the ReplicaSet before the orphan (two
	// watches) and create two pods first; the orphan is then one too many
	// once adopted. Its deletion cost keeps it out of that deletion, so the
	// test can follow it, as upstream's ranking does.
	orphan, err := cs.CoreV1().Pods(ns).Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "orphan", Labels: map[string]string{"app": "db"},
			Annotations: map[string]string{"controller.kubernetes.io/pod-deletion-cost": "1000"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := cs.AppsV1().ReplicaSets(ns).Create(context.Background(), newRS("db", 2), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "orphan adopted and one pod added", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "orphan", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ref := metav1.GetControllerOf(p)
		pods, err := podsOf(ctx, cs, ns, "db")
		return ref != nil && ref.UID == rs.UID && len(pods) == 2, err
	})
	// Relabelled out of the selector: released, and replaced.
	p, err := cs.CoreV1().Pods(ns).Get(context.Background(), "orphan", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Labels = map[string]string{"app": "elsewhere"}
	if _, err := cs.CoreV1().Pods(ns).Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "released and replaced", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, orphan.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pods, err := podsOf(ctx, cs, ns, "db")
		return len(p.OwnerReferences) == 0 && len(pods) == 2, err
	})
}
