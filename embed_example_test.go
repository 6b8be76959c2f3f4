package kite_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite"
)

// TestEmbedding is the example of README.md ("Embed it"), as written there:
// if it stops compiling or passing, the README is wrong.
func TestEmbedding(t *testing.T) {
	srv, err := kite.Start(t.Context(), kite.Options{EtcdUnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	client := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ns, err := client.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{})
	if err != nil || ns.Status.Phase != "Active" {
		t.Fatalf("default namespace: %v, %v", ns.Status.Phase, err)
	}
}
