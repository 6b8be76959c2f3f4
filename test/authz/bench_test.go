package authz_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/apiserver/authn"
)

// BenchmarkRequestLatencyByAuthorizationMode compares the p50 and p99 of
// a GET of one configMap by a user bound to a Role, under Node,RBAC and
// under AlwaysAllow: two servers of their own, measured in turns so that
// both see the same machine load. It reports the ratios (goal: p50 at
// most 1.05x). With 10 000 other RoleBindings in the namespace under
// RBAC, to show the cost stays flat.
func BenchmarkRequestLatencyByAuthorizationMode(b *testing.B) {
	ctx := b.Context()
	start := func(mode string) (*kite.Server, kubernetes.Interface) {
		srv, err := kite.Start(ctx, kite.Options{AuthorizationMode: mode, Controllers: []string{}, EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal",
			StaticTokens: []authn.Token{{Value: "bench-token", User: &user.DefaultInfo{Name: "bench", Groups: []string{user.AllAuthenticated}}}}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { srv.Close() })
		cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := cs.CoreV1().ConfigMaps("bench").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := cs.RbacV1().Roles("bench").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		binding := func(name, subject string) *rbacv1.RoleBinding {
			return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "read"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: subject}}}
		}
		if _, err := cs.RbacV1().RoleBindings("bench").Create(ctx, binding("bench", "bench"), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if mode != "AlwaysAllow" {
			// In process: 10 000 HTTP round trips would cost more than
			// the measurement.
			store := srv.Resources().Store("rolebindings.rbac.authorization.k8s.io")
			for i := range 10000 {
				rb := binding(fmt.Sprint("other-", i), fmt.Sprint("user-", i))
				rb.Namespace, rb.RoleRef.APIGroup = "bench", rbacv1.GroupName
				rb.Subjects[0].APIGroup = rbacv1.GroupName
				if _, err := store.Create(ctx, "bench", rb, &metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		}
		cfg := srv.RESTConfig()
		cfg.BearerToken = "bench-token"
		user := kubernetes.NewForConfigOrDie(cfg)
		// Until the authorizer has the binding.
		for {
			if _, err := user.CoreV1().ConfigMaps("bench").Get(ctx, "c", metav1.GetOptions{}); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		return srv, user
	}
	_, rbacUser := start("Node,RBAC")
	_, allowUser := start("AlwaysAllow")
	get := func(cs kubernetes.Interface, into *[]time.Duration) {
		t0 := time.Now()
		if _, err := cs.CoreV1().ConfigMaps("bench").Get(ctx, "c", metav1.GetOptions{}); err != nil {
			b.Fatal(err)
		}
		*into = append(*into, time.Since(t0))
	}
	var rbacTimes, allowTimes []time.Duration
	b.ResetTimer()
	for b.Loop() {
		get(rbacUser, &rbacTimes)
		get(allowUser, &allowTimes)
	}
	b.StopTimer()
	pct := func(ds []time.Duration, p float64) float64 {
		s := slices.Clone(ds)
		slices.Sort(s)
		return float64(s[int(p*float64(len(s)-1))].Microseconds())
	}
	b.ReportMetric(pct(rbacTimes, 0.5), "rbac-p50-µs")
	b.ReportMetric(pct(allowTimes, 0.5), "alwaysallow-p50-µs")
	b.ReportMetric(pct(rbacTimes, 0.5)/pct(allowTimes, 0.5), "p50-ratio")
	b.ReportMetric(pct(rbacTimes, 0.99)/pct(allowTimes, 0.99), "p99-ratio")
}
