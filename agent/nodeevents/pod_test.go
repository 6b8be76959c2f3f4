package nodeevents_test

import (
	"context"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/agent/nodeevents"
)

// TestPodEvents: pod and container events land in the pod's namespace
// about the pod (container events with the kubelet's field path), and a
// repeat counts on one Event.
func TestPodEvents(t *testing.T) {
	srv, err := kite.Start(t.Context(), kite.Options{EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	rec, err := nodeevents.New(nodeevents.Options{Client: cs.CoreV1(), NodeName: "node-a"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { rec.Run(ctx) })
	defer wg.Wait()
	defer cancel()

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "setup"}}, Containers: []v1.Container{{Name: "app"}}}}
	rec.ContainerEventf(pod, "app", v1.EventTypeNormal, "Started", "Container started")
	rec.ContainerEventf(pod, "setup", v1.EventTypeNormal, "Started", "Container started")
	rec.ContainerEventf(pod, "app", v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", "app", "web_default(uid-1)")
	rec.ContainerEventf(pod, "app", v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", "app", "web_default(uid-1)")
	rec.Eventf(pod, v1.EventTypeWarning, "FailedMount", "MountVolume.SetUp failed")

	want := map[string]struct {
		typ   string
		count int32
	}{
		"Started spec.containers{app}":       {v1.EventTypeNormal, 1},
		"Started spec.initContainers{setup}": {v1.EventTypeNormal, 1},
		"BackOff spec.containers{app}":       {v1.EventTypeWarning, 2},
		"FailedMount ":                       {v1.EventTypeWarning, 1},
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		list, err := cs.CoreV1().Events("default").List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]struct {
			typ   string
			count int32
		}{}
		for _, e := range list.Items {
			if e.InvolvedObject.Kind != "Pod" || e.InvolvedObject.UID != "uid-1" || e.Source.Host != "node-a" {
				t.Fatalf("event %+v is not about the pod from node-a", e)
			}
			got[e.Reason+" "+e.InvolvedObject.FieldPath] = struct {
				typ   string
				count int32
			}{e.Type, e.Count}
		}
		if len(got) == len(want) && got["BackOff spec.containers{app}"].count == 2 {
			for k, w := range want {
				if got[k] != w {
					t.Errorf("%s = %+v, want %+v", k, got[k], w)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("events = %+v, want %+v", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
