package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The process runtime has no runtime handlers: a pod whose RuntimeClass
// names one (runc here) is not run as if it had got it. Its sandbox fails
// as on a node whose containerd lacks the handler, with the kubelet's
// FailedCreatePodSandBox event, and the pod stays Pending in
// ContainerCreating; a pod without a RuntimeClass runs beside it.
func TestProcessRuntimeRefusesRuntimeHandlers(t *testing.T) {
	cs := clientset(t, shared.RESTConfig())
	ctx := context.Background()
	node := unique("rc-process")
	ns := createNamespace(t, cs, "rc-process")
	class := unique("rc-runc")
	if _, err := cs.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Handler: "runc"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.NodeV1().RuntimeClasses().Delete(context.Background(), class, metav1.DeleteOptions{}) })
	startPodAgent(t, Options{NodeName: node, RESTConfig: shared.RESTConfig()})
	for _, name := range []string{"plain", "runc"} {
		p := newPod(ns, name, node)
		p.Spec.Containers[0].Command = []string{"sh", "-c", "sleep 3600"}
		grace := int64(1)
		p.Spec.TerminationGracePeriodSeconds = &grace
		if name == "runc" {
			p.Spec.RuntimeClassName = &class
		}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			zero := int64(0)
			cs.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		})
	}
	waitAPIPod(t, cs, ns, "plain", "Running", runningWithContainer)
	want := `RuntimeHandler "runc" not supported`
	deadline := time.Now().Add(waitTimeout)
	for {
		list, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range list.Items {
			if e.InvolvedObject.Name == "runc" && e.Reason == "FailedCreatePodSandBox" && e.Type == v1.EventTypeWarning &&
				strings.HasPrefix(e.Message, "Failed to create pod sandbox: ") && strings.Contains(e.Message, want) {
				found = true
			}
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no FailedCreatePodSandBox event saying %q on pod runc; events: %+v", want, list.Items)
		}
		time.Sleep(50 * time.Millisecond) // polling, not synchronisation
	}
	waitAPIPod(t, cs, ns, "runc", "Pending in ContainerCreating", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodPending && len(p.Status.ContainerStatuses) == 1 &&
			p.Status.ContainerStatuses[0].State.Waiting != nil && p.Status.ContainerStatuses[0].State.Waiting.Reason == "ContainerCreating"
	})
}
