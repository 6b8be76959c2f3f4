package storage

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const waitTimeout = 60 * time.Second

// namespace makes a namespace named after the test.
func namespace(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 60 {
		name = name[:60]
	}
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// claim is a 1Gi ReadWriteOnce claim; class nil leaves it to the default.
func claim(name string, class *string, modify ...func(*v1.PersistentVolumeClaim)) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PersistentVolumeClaimSpec{
		AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		StorageClassName: class,
	}}
	for _, m := range modify {
		m(c)
	}
	return c
}

// podUsing is a pod on the agent's node (by its hostname label, so that
// the scheduler places it) running script with the claim mounted at mnt.
func podUsing(name, claimName, mnt, script string, readOnly bool) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{
		NodeSelector:                  map[string]string{v1.LabelHostname: nodeName},
		RestartPolicy:                 v1.RestartPolicyNever,
		AutomountServiceAccountToken:  ptr.To(false),
		TerminationGracePeriodSeconds: ptr.To(int64(1)),
		Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claimName, ReadOnly: readOnly}}}},
		Containers: []v1.Container{{Name: "main", Image: "busybox", Command: []string{"sh", "-c", script},
			VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: mnt}}}},
	}}
}

// eventually polls get until cond holds, failing the test after
// waitTimeout with the last object.
func eventually[T any](t *testing.T, what string, get func(context.Context) (T, error), cond func(T, error) bool) T {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		obj, err := get(t.Context())
		if cond(obj, err) {
			return obj
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last: %+v, %v", what, obj, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func phase(p v1.PodPhase) func(*v1.Pod, error) bool {
	return func(pod *v1.Pod, err error) bool { return err == nil && pod.Status.Phase == p }
}

func gone[T any](_ T, err error) bool { return apierrors.IsNotFound(err) }

// waitPod waits for the pod to reach phase p.
func waitPod(t *testing.T, ns, name string, p v1.PodPhase) *v1.Pod {
	t.Helper()
	return eventually(t, fmt.Sprintf("pod %s/%s %s", ns, name, p), func(ctx context.Context) (*v1.Pod, error) {
		return cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	}, phase(p))
}

// waitClaim waits for the claim to be Bound.
func waitClaim(t *testing.T, ns, name string) *v1.PersistentVolumeClaim {
	t.Helper()
	return eventually(t, "claim "+ns+"/"+name+" Bound", func(ctx context.Context) (*v1.PersistentVolumeClaim, error) {
		return cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
	}, func(c *v1.PersistentVolumeClaim, err error) bool {
		return err == nil && c.Status.Phase == v1.ClaimBound
	})
}

// events are the messages of the object's events of reason.
func events(t *testing.T, ns string, uid any, reason string) []string {
	t.Helper()
	list, err := cs.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if string(e.InvolvedObject.UID) == fmt.Sprint(uid) && e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func resourceQuantity(s string) resource.Quantity { return resource.MustParse(s) }
