package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// A pod run by the process runtime finds the API server in its
// environment as rest.InClusterConfig looks for it: the kubernetes
// Service's KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT.
func TestPodSeesTheKubernetesServiceInItsEnvironment(t *testing.T) {
	node := unique("svcenv-node")
	cfg := shared.RESTConfig()
	cs := clientset(t, cfg)
	ns := createNamespace(t, cs, "svcenv")
	root := t.TempDir()
	startPodAgent(t, Options{NodeName: node, RESTConfig: cfg, RootDir: root})
	svc, err := cs.CoreV1().Services("default").Get(t.Context(), "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := cs.CoreV1().Pods(ns).Create(t.Context(), &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "env"}, Spec: v1.PodSpec{
		NodeName: node, RestartPolicy: v1.RestartPolicyNever, AutomountServiceAccountToken: new(bool),
		Containers: []v1.Container{{Name: "main", Image: "busybox", Command: []string{"sh", "-c", `echo "api=$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"`}}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := "api=" + svc.Spec.ClusterIP + ":443"
	var log []byte
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		log, _ = os.ReadFile(filepath.Join(root, "pods", ns+"_env_"+string(pod.UID), "main", "0.log"))
		return strings.Contains(string(log), want), nil
	}); err != nil {
		t.Fatalf("the container's output %q does not say %q", log, want)
	}
}
