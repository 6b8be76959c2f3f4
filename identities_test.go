package kite_test

import (
	"context"
	"net"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite"
)

// TestClusterDNSRunsAsCoreDNS: the cluster DNS has CoreDNS's identity as
// kubeadm installs it (the ServiceAccount kube-system/coredns bound to
// system:coredns), which lets it list and watch what it serves and
// nothing more, and it answers with it.
func TestClusterDNSRunsAsCoreDNS(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	srv, err := kite.Start(ctx, kite.Options{EtcdUnsafeNoFsync: true, ClusterDNS: kite.ClusterDNSOptions{Addr: "127.0.0.1:0", Upstreams: []string{}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ServiceAccounts("kube-system").Get(ctx, "coredns", metav1.GetOptions{}); err != nil {
		t.Errorf("serviceaccount kube-system/coredns: %v", err)
	}
	b, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, "system:coredns", metav1.GetOptions{})
	if err != nil || b.RoleRef.Name != "system:coredns" || len(b.Subjects) != 1 || b.Subjects[0].Name != "coredns" {
		t.Errorf("clusterrolebinding system:coredns: %+v, %v", b, err)
	}
	for _, tc := range []struct {
		verb, group, resource string
		want                  bool
	}{
		{"watch", "", "services", true},
		{"list", "discovery.k8s.io", "endpointslices", true},
		{"get", "", "secrets", false},
		{"create", "", "pods", false},
	} {
		r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:serviceaccount:kube-system:coredns", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: tc.verb, Group: tc.group, Resource: tc.resource},
		}}, metav1.CreateOptions{})
		if err != nil || r.Status.Allowed != tc.want {
			t.Errorf("may coredns %s %s.%s: %v, %v; want %v", tc.verb, tc.resource, tc.group, r.Status.Allowed, err, tc.want)
		}
	}
	// And it serves: the kubernetes Service's name resolves.
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, srv.ClusterDNSAddr())
	}}
	if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		addrs, err := resolver.LookupHost(ctx, "kubernetes.default.svc.cluster.local")
		return err == nil && len(addrs) > 0, nil
	}); err != nil {
		t.Errorf("kubernetes.default.svc.cluster.local never resolved: %v", err)
	}
}
