package controllers_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/controllers"
	"github.com/kite-project/kite/kitetest"
)

var srv *kite.Server

// The shared Kite runs every controller, as "kite server" does.
func TestMain(m *testing.M) {
	kitetest.MainWith(m, kite.Options{Controllers: controllers.All()}, func(s *kite.Server) { srv = s })
}

func TestEveryControllerRunsAndGoesIdle(t *testing.T) {
	m := srv.Controllers()
	if !slices.Equal(m.Names(), controllers.All()) {
		t.Fatalf("running %v, want %v", m.Names(), controllers.All())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := m.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range controllers.All() {
		if m.Get(name) == nil {
			t.Errorf("no %s", name)
		}
	}
}

func TestUnknownControllerIsRefused(t *testing.T) {
	_, err := controllers.New(controllers.Options{Config: &rest.Config{Host: "https://127.0.0.1:1"}, Names: []string{"replicaset-controler"}})
	if err == nil || !strings.Contains(err.Error(), `unknown controller "replicaset-controler"`) {
		t.Fatalf("err = %v, want an unknown controller error", err)
	}
}

// The root CA publisher publishes the CA its config verifies the API
// server with: CA data, else the CA file (a kubeconfig's
// certificate-authority); a config with none has nothing to publish.
func TestRootCAPublisherTakesItsConfigsCA(t *testing.T) {
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, srv.RESTConfig().CAData, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		tls     rest.TLSClientConfig
		wantErr string
	}{
		{"CA data", rest.TLSClientConfig{CAData: srv.RESTConfig().CAData}, ""},
		{"CA file", rest.TLSClientConfig{CAFile: caFile}, ""},
		{"no CA", rest.TLSClientConfig{Insecure: true}, "no certificate authority"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := controllers.New(controllers.Options{Config: &rest.Config{Host: "https://127.0.0.1:1", TLSClientConfig: tc.tls}, Names: []string{controllers.RootCACertPublisher}})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}

func TestEmbeddedDefaultRunsNamespaceServiceAccountRootCAAndAggregationControllers(t *testing.T) {
	want := []string{controllers.Namespace, controllers.ServiceAccount, controllers.RootCACertPublisher, controllers.ClusterRoleAggregation}
	if !slices.Equal(controllers.EmbeddedDefault(), want) {
		t.Fatalf("EmbeddedDefault = %v, want %v", controllers.EmbeddedDefault(), want)
	}
}

// The controllers write as kube-controller-manager: the API server names
// the field manager of a write after its client's user agent, so a
// Deployment's status, written by the deployment controller, is owned by
// "kube-controller-manager" in managedFields (and a server-side apply
// conflict with it names that manager), as against upstream.
func TestControllersWriteAsKubeControllerManager(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "fieldmanager-"}}
	ns, err := cs.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	zero := int32(0)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: &zero,
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	if _, err := cs.AppsV1().Deployments(ns.Name).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var managers []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		got, err := cs.AppsV1().Deployments(ns.Name).Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		managers = managers[:0]
		for _, f := range got.ManagedFields {
			managers = append(managers, f.Manager+"/"+f.Subresource)
			if f.Subresource == "status" && f.Manager == "kube-controller-manager" {
				return
			}
		}
	}
	t.Fatalf("managedFields managers %v, want kube-controller-manager/status", managers)
}

// TestSchedulerWritesAsKubeScheduler: the PodScheduled condition the
// scheduler writes to a pod it cannot place is managed by
// "kube-scheduler", as against upstream.
func TestSchedulerWritesAsKubeScheduler(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ns, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "schedmanager-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nowhere"}, Spec: corev1.PodSpec{
		NodeSelector: map[string]string{"kite.test/no-such-node": "true"},
		Containers:   []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := cs.CoreV1().Pods(ns.Name).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var managers []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		got, err := cs.CoreV1().Pods(ns.Name).Get(t.Context(), "nowhere", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		managers = managers[:0]
		for _, f := range got.ManagedFields {
			managers = append(managers, f.Manager+"/"+f.Subresource)
			if f.Subresource == "status" && f.Manager == "kube-scheduler" {
				return
			}
		}
	}
	t.Fatalf("managedFields managers %v, want kube-scheduler/status", managers)
}
