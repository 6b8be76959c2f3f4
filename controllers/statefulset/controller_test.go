package statefulset_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/controllers/statefulset"
)

func start(t testing.TB) (kubernetes.Interface, string, *statefulset.Controller) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	c, err := statefulset.New(statefulset.Options{Client: cs})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { c.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sts-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cs, ns.Name, c
}

func newSet(name string, replicas int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To(replicas),
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1",
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}},
		},
	}
}

func eventually(t *testing.T, what string, f func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 20*time.Second, true, f); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// names lists the pods of the namespace not being deleted, by name.
func names(ctx context.Context, cs kubernetes.Interface, ns string) ([]string, map[string]corev1.Pod, error) {
	l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	var out []string
	byName := map[string]corev1.Pod{}
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p.Name)
			byName[p.Name] = p
		}
	}
	sort.Strings(out)
	return out, byName, nil
}

// markReady does what a node would: the pod runs and is Ready.
func markReady(t *testing.T, cs kubernetes.Interface, p corev1.Pod) {
	t.Helper()
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if _, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(context.Background(), &p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestStatefulSetStartsInOrderWithClaimsAndScalesDownFromTheTop: web-0,
// web-1, web-2 come one at a time, each only once the one before is
// Ready, each with its claim data-web-<n>; a scale down removes web-2
// before web-1 and keeps their claims (whenScaled Retain).
func TestStatefulSetStartsInOrderWithClaimsAndScalesDownFromTheTop(t *testing.T) {
	cs, ns, _ := start(t)
	ctx := context.Background()
	if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, newSet("web", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		want := make([]string, i+1)
		for j := range want {
			want[j] = fmt.Sprintf("web-%d", j)
		}
		var byName map[string]corev1.Pod
		eventually(t, fmt.Sprintf("pods %v", want), func(ctx context.Context) (bool, error) {
			got, m, err := names(ctx, cs, ns)
			byName = m
			return slices.Equal(got, want), err
		})
		// Nothing more comes while the newest is not Ready.
		time.Sleep(100 * time.Millisecond)
		if got, _, _ := names(ctx, cs, ns); !slices.Equal(got, want) {
			t.Fatalf("pods %v before %s was Ready, want %v", got, want[i], want)
		}
		p := byName[want[i]]
		if p.Spec.Hostname != p.Name || p.Spec.Subdomain != "web" || p.Labels[appsv1.StatefulSetPodNameLabel] != p.Name ||
			p.Labels[appsv1.PodIndexLabel] != fmt.Sprint(i) || p.Labels[appsv1.ControllerRevisionHashLabelKey] == "" {
			t.Errorf("pod %s identity: hostname %q subdomain %q labels %v", p.Name, p.Spec.Hostname, p.Spec.Subdomain, p.Labels)
		}
		if v := p.Spec.Volumes[0]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != fmt.Sprintf("data-web-%d", i) {
			t.Errorf("pod %s volume %+v", p.Name, v)
		}
		claim, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, fmt.Sprintf("data-web-%d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("claim of %s: %v", p.Name, err)
		}
		if claim.Labels["app"] != "web" || claim.CreationTimestamp.After(p.CreationTimestamp.Time) {
			t.Errorf("claim %s labels %v created %v after its pod %v", claim.Name, claim.Labels, claim.CreationTimestamp, p.CreationTimestamp)
		}
		markReady(t, cs, p)
	}
	eventually(t, "status of 3 ready", func(ctx context.Context) (bool, error) {
		s, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && s.Status.ReadyReplicas == 3 && s.Status.AvailableReplicas == 3 && s.Status.ObservedGeneration == 1 &&
			s.Status.CurrentRevision != "" && s.Status.CurrentRevision == s.Status.UpdateRevision && s.Status.UpdatedReplicas == 3, err
	})

	// The order of deletions, from a watch started before the scale.
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := cs.AppsV1().StatefulSets(ns).UpdateScale(ctx, "web", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: autoscalingv1.ScaleSpec{Replicas: 1}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var deleted []string
	timeout := time.After(20 * time.Second)
	for len(deleted) < 2 {
		select {
		case ev := <-w.ResultChan():
			if ev.Type == watch.Deleted {
				deleted = append(deleted, ev.Object.(*corev1.Pod).Name)
			}
		case <-timeout:
			t.Fatalf("deleted %v, want web-2 and web-1", deleted)
		}
	}
	if !slices.Equal(deleted, []string{"web-2", "web-1"}) {
		t.Errorf("deletion order %v, want web-2 then web-1", deleted)
	}
	if got, _, _ := names(ctx, cs, ns); !slices.Equal(got, []string{"web-0"}) {
		t.Errorf("pods after scale down: %v", got)
	}
	claims, err := cs.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(claims.Items) != 3 {
		t.Fatalf("claims after scale down: %d (%v), want the 3 retained", len(claims.Items), err)
	}
}

// TestStatefulSetRollingUpdateInReverseOrder: a new template replaces the
// pods highest ordinal first, one at a time, each new one at the update
// revision; the set reports the rollout and then the update revision as
// current; the history has both revisions.
func TestStatefulSetRollingUpdateInReverseOrder(t *testing.T) {
	cs, ns, _ := start(t)
	ctx := context.Background()
	s := newSet("db", 3)
	s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	readyAll := func() {
		_, byName, err := names(ctx, cs, ns)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range byName {
			if p.Status.Phase != corev1.PodRunning {
				markReady(t, cs, p)
			}
		}
	}
	eventually(t, "three pods", func(ctx context.Context) (bool, error) {
		got, _, err := names(ctx, cs, ns)
		return len(got) == 3, err
	})
	readyAll()
	var first string
	eventually(t, "rolled out", func(ctx context.Context) (bool, error) {
		s, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		first = s.Status.CurrentRevision
		return err == nil && s.Status.ReadyReplicas == 3 && first != "", err
	})
	cur, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Template.Spec.Containers[0].Image = "busybox:2"
	if _, err := cs.AppsV1().StatefulSets(ns).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var order []string
	for len(order) < 3 {
		var updated string
		eventually(t, fmt.Sprintf("update %d", len(order)+1), func(ctx context.Context) (bool, error) {
			_, byName, err := names(ctx, cs, ns)
			for name, p := range byName {
				if p.Spec.Containers[0].Image == "busybox:2" && !slices.Contains(order, name) {
					updated = name
					return len(byName) >= 2, err
				}
			}
			return false, err
		})
		order = append(order, updated)
		readyAll()
	}
	if !slices.Equal(order, []string{"db-2", "db-1", "db-0"}) {
		t.Errorf("update order %v, want db-2, db-1, db-0", order)
	}
	eventually(t, "update revision current", func(ctx context.Context) (bool, error) {
		s, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		return err == nil && s.Status.CurrentRevision == s.Status.UpdateRevision && s.Status.CurrentRevision != first &&
			s.Status.UpdatedReplicas == 3 && s.Status.ReadyReplicas == 3, err
	})
	revs, err := cs.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(revs.Items) != 2 {
		t.Fatalf("revisions: %d (%v), want 2", len(revs.Items), err)
	}
}

// TestStatefulSetDeletedPodComesBackWithItsClaim: a deleted pod is made
// again under its name, with the same claim.
func TestStatefulSetDeletedPodComesBackWithItsClaim(t *testing.T) {
	cs, ns, c := start(t)
	ctx := context.Background()
	s := newSet("kv", 1)
	if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var uid string
	eventually(t, "kv-0", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "kv-0", metav1.GetOptions{})
		if err == nil {
			uid = string(p.UID)
		}
		return err == nil, nil
	})
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "kv-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "kv-0 again", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "kv-0", metav1.GetOptions{})
		return err == nil && string(p.UID) != uid && p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName == "data-kv-0", nil
	})
	if err := c.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	claims, err := cs.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(claims.Items) != 1 {
		t.Fatalf("claims: %d (%v), want 1", len(claims.Items), err)
	}
}

// TestParallelSetMakesEveryPodAndClaimAtOnce: a Parallel set of 20 makes
// all its pods, each after its claim, without waiting for any to be
// Ready (in slow-start batches), each exactly once, and its status counts
// them.
func TestParallelSetMakesEveryPodAndClaimAtOnce(t *testing.T) {
	cs, ns, _ := start(t)
	ctx := context.Background()
	const n = 20
	s := newSet("burst", n)
	s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "20 pods counted in status", func(ctx context.Context) (bool, error) {
		s, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "burst", metav1.GetOptions{})
		return err == nil && s.Status.Replicas == n, err
	})
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claims, err := cs.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got, gotClaims, want, wantClaims []string
	for i := range n {
		want = append(want, fmt.Sprintf("burst-%d", i))
		wantClaims = append(wantClaims, fmt.Sprintf("data-burst-%d", i))
	}
	for _, p := range pods.Items {
		got = append(got, p.Name)
	}
	for _, c := range claims.Items {
		gotClaims = append(gotClaims, c.Name)
	}
	slices.Sort(want)
	slices.Sort(wantClaims)
	slices.Sort(got)
	slices.Sort(gotClaims)
	if !slices.Equal(got, want) || !slices.Equal(gotClaims, wantClaims) {
		t.Errorf("pods %v and claims %v, want %v and %v", got, gotClaims, want, wantClaims)
	}
}
