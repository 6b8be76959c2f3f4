package serviceaccount_test

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/controllers"
	"github.com/kite-project/kite/kitetest"
)

var srv *kite.Server

// The embedded default runs the serviceaccount controller.
func TestMain(m *testing.M) { kitetest.Main(m, func(s *kite.Server) { srv = s }) }

func TestDefaultAccountIsCreatedAndRecreated(t *testing.T) {
	cs, err := kubernetes.NewForConfig(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sa-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	has := func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, has); err != nil {
		t.Fatalf("no default service account: %v", err)
	}
	if err := cs.CoreV1().ServiceAccounts(ns.Name).Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, has); err != nil {
		t.Fatalf("default service account not made again: %v", err)
	}
	if err := srv.Controllers().Get(controllers.ServiceAccount).WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
}
