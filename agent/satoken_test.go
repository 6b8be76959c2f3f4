package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
)

// TestPodsServiceAccountTokenAuthenticatesUntilThePodIsDeleted is the
// story of a pod's token: the ServiceAccount plugin gives the pod its
// kube-api-access volume, the agent writes the token it asked for
// (TokenRequest bound to the pod) into the volume, the token
// authenticates as system:serviceaccount:<ns>:default, and once the pod
// is deleted it authenticates no more.
func TestPodsServiceAccountTokenAuthenticatesUntilThePodIsDeleted(t *testing.T) {
	node := unique("satoken-node")
	cfg := shared.RESTConfig()
	cs := clientset(t, cfg)
	ns := createNamespace(t, cs, "satoken")
	root := t.TempDir()
	startPodAgent(t, Options{NodeName: node, RESTConfig: cfg, RootDir: root})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}, Spec: v1.PodSpec{
		NodeName: node, RestartPolicy: v1.RestartPolicyNever,
		Containers: []v1.Container{{Name: "main", Image: "busybox", Command: []string{"sh", "-c", "sleep 600"}}},
	}}
	created, err := cs.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var token []byte
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		files, _ := filepath.Glob(filepath.Join(root, "pods", string(created.UID), "volumes", "*", "kube-api-access-*", "token"))
		if len(files) == 0 {
			return false, nil
		}
		token, err = os.ReadFile(files[0])
		return err == nil && len(token) > 0, nil
	}); err != nil {
		t.Fatalf("no token file in the pod's kube-api-access volume: %v", err)
	}
	whoami := func() (*authenticationv1.SelfSubjectReview, error) {
		anon := rest.AnonymousClientConfig(cfg)
		anon.BearerToken = string(token)
		return clientset(t, anon).AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	}
	review, err := whoami()
	if err != nil {
		t.Fatalf("the pod's token does not authenticate: %v", err)
	}
	if want := "system:serviceaccount:" + ns + ":default"; review.Status.UserInfo.Username != want {
		t.Errorf("the pod's token is %q, want %q", review.Status.UserInfo.Username, want)
	}
	if err := cs.CoreV1().Pods(ns).Delete(t.Context(), "app", *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		_, err := whoami()
		return err != nil, nil
	}); err != nil {
		t.Fatalf("the token still authenticates after the pod is deleted: %v", err)
	}
	_, err = whoami()
	if !apierrors.IsUnauthorized(err) {
		t.Errorf("after the pod's deletion: %v, want 401", err)
	}
}
