package rootcacertpublisher_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/url"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/controllers"
	"github.com/kite-project/kite/controllers/rootcacertpublisher"
	"github.com/kite-project/kite/kitetest"
)

var srv *kite.Server

// The embedded default runs the root CA publisher: pods of envtest-style
// users mount kube-root-ca.crt through their service account volume.
func TestMain(m *testing.M) { kitetest.Main(m, func(s *kite.Server) { srv = s }) }

func setup(t *testing.T) (kubernetes.Interface, *v1.Namespace) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ns, err := cs.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "rootca-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cs, ns
}

// published waits until the namespace's ConfigMap holds the cluster CA
// alone and upstream's description, and returns it.
func published(t *testing.T, cs kubernetes.Interface, ns string) *v1.ConfigMap {
	t.Helper()
	want := string(srv.RESTConfig().CAData)
	var cm *v1.ConfigMap
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, rootcacertpublisher.ConfigMapName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		cm = got
		return len(got.Data) == 1 && got.Data["ca.crt"] == want && got.Annotations["kubernetes.io/description"] == rootcacertpublisher.Description, nil
	})
	if err != nil {
		t.Fatalf("%s/kube-root-ca.crt never held the cluster CA with its description (last: %+v): %v", ns, cm, err)
	}
	return cm
}

func TestNewNamespaceGetsTheClusterCA(t *testing.T) {
	cs, ns := setup(t)
	cm := published(t, cs, ns.Name)
	// The bundle is what a client in a pod verifies the API server with:
	// check it does.
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(cm.Data["ca.crt"])) {
		t.Fatalf("ca.crt holds no PEM certificate: %q", cm.Data["ca.crt"])
	}
	u, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{RootCAs: pool, ServerName: u.Hostname()})
	if err != nil {
		t.Fatalf("the published CA does not verify the API server at %s: %v", u.Host, err)
	}
	conn.Close()
}

func TestDeletedConfigMapIsMadeAgain(t *testing.T) {
	cs, ns := setup(t)
	old := published(t, cs, ns.Name)
	if err := cs.CoreV1().ConfigMaps(ns.Name).Delete(t.Context(), rootcacertpublisher.ConfigMapName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if cm := published(t, cs, ns.Name); cm.UID == old.UID {
		t.Fatalf("still the deleted ConfigMap %s", cm.UID)
	}
}

func TestChangedConfigMapIsPutBack(t *testing.T) {
	tests := []struct {
		name   string
		change func(cm *v1.ConfigMap)
	}{
		{"data emptied", func(cm *v1.ConfigMap) { cm.Data = map[string]string{"ca.crt": ""} }},
		{"another CA", func(cm *v1.ConfigMap) { cm.Data["ca.crt"] = "not a CA" }},
		{"a key added", func(cm *v1.ConfigMap) { cm.Data["extra"] = "x" }},
		{"description removed", func(cm *v1.ConfigMap) { delete(cm.Annotations, "kubernetes.io/description") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs, ns := setup(t)
			cm := published(t, cs, ns.Name)
			tc.change(cm)
			cm.Labels = map[string]string{"mine": "yes"}
			if _, err := cs.CoreV1().ConfigMaps(ns.Name).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if got := published(t, cs, ns.Name); got.Labels["mine"] != "yes" {
				t.Errorf("labels = %v: the user's label was dropped", got.Labels)
			}
		})
	}
}

// Upstream's conformance test "ServiceAccounts should guarantee
// kube-root-ca.crt exist in any namespace" (test/e2e/auth/
// service_accounts.go), step for step: it exists; deleted, it comes back;
// replaced by an update with an empty ca.crt, it is reconciled.
func TestConformanceRootCAConfigMapExistsInAnyNamespace(t *testing.T) {
	cs, ns := setup(t)
	ctx := t.Context()
	get := func(ctx context.Context) (*v1.ConfigMap, error) {
		return cs.CoreV1().ConfigMaps(ns.Name).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
	}
	exists := func(ctx context.Context) (bool, error) {
		_, err := get(ctx)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, exists); err != nil {
		t.Fatalf("root ca configmap never appeared: %v", err)
	}
	if err := cs.CoreV1().ConfigMaps(ns.Name).Delete(ctx, "kube-root-ca.crt", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, false, exists); err != nil {
		t.Fatalf("root ca configmap not made again: %v", err)
	}
	// Upstream updates with no resourceVersion: an unconditional update.
	if _, err := cs.CoreV1().ConfigMaps(ns.Name).Update(ctx, &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"},
		Data:       map[string]string{"ca.crt": ""},
	}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	reconciled := func(ctx context.Context) (bool, error) {
		cm, err := get(ctx)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return cm.Data["ca.crt"] != "", nil
	}
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, false, reconciled); err != nil {
		t.Fatalf("root ca configmap not reconciled: %v", err)
	}
	if err := srv.Controllers().Get(controllers.RootCACertPublisher).WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
}
