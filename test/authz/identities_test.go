package authz_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/controllers"
)

// whoami is the user a configuration authenticates as, by
// SelfSubjectReview (kubectl auth whoami).
func whoami(t *testing.T, cfg *rest.Config) authenticationv1.UserInfo {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("whoami: %v", err)
	}
	return r.Status.UserInfo
}

func TestControllersRunWithUpstreamIdentitiesAndTheirRolesOnly(t *testing.T) {
	ns := namespace(t)
	ctx := t.Context()
	for _, tc := range []struct {
		controller string
		user       string
		// forbidden is a write outside the controller's role, and
		// upstream's refusal of it.
		forbidden func(ctx context.Context, cs kubernetes.Interface) error
		message   string
	}{
		{controllers.Namespace, "system:serviceaccount:kube-system:namespace-controller",
			func(ctx context.Context, cs kubernetes.Interface) error {
				_, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{})
				return err
			},
			`secrets is forbidden: User "system:serviceaccount:kube-system:namespace-controller" cannot create resource "secrets" in API group "" in the namespace "` + ns + `"`},
		{controllers.ServiceAccount, "system:serviceaccount:kube-system:service-account-controller",
			func(ctx context.Context, cs kubernetes.Interface) error {
				return cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
			},
			`namespaces "` + ns + `" is forbidden: User "system:serviceaccount:kube-system:service-account-controller" cannot delete resource "namespaces" in API group "" in the namespace "` + ns + `"`},
		{controllers.ClusterRoleAggregation, "system:serviceaccount:kube-system:clusterrole-aggregation-controller",
			func(ctx context.Context, cs kubernetes.Interface) error {
				_, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
				return err
			},
			`pods is forbidden: User "system:serviceaccount:kube-system:clusterrole-aggregation-controller" cannot list resource "pods" in API group "" in the namespace "` + ns + `"`},
	} {
		t.Run(tc.controller, func(t *testing.T) {
			cfg := shared.Controllers().Config(tc.controller)
			if cfg == nil {
				t.Fatalf("the shared server does not run %s", tc.controller)
			}
			if got := whoami(t, cfg); got.Username != tc.user || !slices.Contains(got.Groups, "system:serviceaccounts:kube-system") {
				t.Errorf("%s runs as %s %v, want %s in system:serviceaccounts:kube-system", tc.controller, got.Username, got.Groups, tc.user)
			}
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			wantForbidden(t, tc.forbidden(ctx, cs), tc.message)
		})
	}
	// The controllers' ServiceAccounts are made as upstream's client
	// builder makes them.
	if _, err := admin(t).CoreV1().ServiceAccounts("kube-system").Get(ctx, "namespace-controller", metav1.GetOptions{}); err != nil {
		t.Errorf("the namespace controller's ServiceAccount: %v", err)
	}
}

// identityRecorder is a validating admission webhook that allows
// everything and records who made each request: an audit of writes.
type identityRecorder struct {
	mu sync.Mutex
	// users are the users of each resource's (and subresource's) writes,
	// in order.
	users map[string][]string
}

func (rec *identityRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	req := review.Request
	what := req.Resource.Resource
	if req.SubResource != "" {
		what += "/" + req.SubResource
	}
	rec.mu.Lock()
	rec.users[what] = append(rec.users[what], req.UserInfo.Username)
	rec.mu.Unlock()
	review.Response = &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	review.Request = nil
	_ = json.NewEncoder(w).Encode(&review)
}

func (rec *identityRecorder) of(what string) []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.users[what])
}

// TestWritesOfControllersCarryTheirIdentities follows a ReplicaSet's pod
// from its creation (by the ReplicaSet controller's ServiceAccount) to its
// binding (by system:kube-scheduler), as an admission webhook sees the
// requests' users.
func TestWritesOfControllersCarryTheirIdentities(t *testing.T) {
	rec := &identityRecorder{users: map[string][]string{}}
	hook := httptest.NewTLSServer(rec)
	defer hook.Close()
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	srv, err := kite.Start(ctx, kite.Options{
		EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal",
		Controllers: []string{controllers.Namespace, controllers.ServiceAccount, controllers.Scheduler, controllers.ReplicaSet},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "identities-", Labels: map[string]string{"identities": "recorded"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fail, side := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	url := hook.URL
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "identities"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "identities.kite.test",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods", "pods/binding"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"identities": "recorded"}},
			FailurePolicy:           &fail,
			SideEffects:             &side,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A Ready node for the scheduler to bind to.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "identities-node"}}
	if node, err = cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node.Status = corev1.NodeStatus{
		Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		Allocatable: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10"), corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi")},
		Capacity:    corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10"), corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi")},
	}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Created by the admin, so the webhook is known to be in place.
	labels := map[string]string{"app": "identities"}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs"}, Spec: appsv1.ReplicaSetSpec{
		Replicas: new(int32(1)),
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			AutomountServiceAccountToken: new(false),
			Containers:                   []corev1.Container{{Name: "c", Image: "busybox"}},
		}},
	}}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Pods(ns.Name).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-"}, Spec: rs.Spec.Template.Spec}, metav1.CreateOptions{})
		return err == nil && len(rec.of("pods")) > 0, nil
	}); err != nil {
		t.Fatalf("the webhook never saw a pod: %v", err)
	}
	if _, err := cs.AppsV1().ReplicaSets(ns.Name).Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const (
		replicaSetController = "system:serviceaccount:kube-system:replicaset-controller"
		scheduler            = "system:kube-scheduler"
	)
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return slices.Contains(rec.of("pods"), replicaSetController) && slices.Contains(rec.of("pods/binding"), scheduler), nil
	}); err != nil {
		t.Fatalf("pods created by %v, bound by %v; want the pod created by %s and bound by %s", rec.of("pods"), rec.of("pods/binding"), replicaSetController, scheduler)
	}
	for _, u := range rec.of("pods/binding") {
		if u != scheduler {
			t.Errorf("a pod was bound by %s, want %s only", u, scheduler)
		}
	}
}

// BenchmarkControllerRequestByCredential: the latency of one GET as a
// controller's ServiceAccount (a TokenRequest token, verified per
// request) against a client certificate (system:kube-controller-manager)
// and the admin token, on the shared server.
func BenchmarkControllerRequestByCredential(b *testing.B) {
	kcm, err := shared.AddUser("system:kube-controller-manager", nil)
	if err != nil {
		b.Fatal(err)
	}
	cs := admin(b)
	if _, err := cs.CoreV1().ConfigMaps("default").Create(b.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bench-credentials"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		cfg  *rest.Config
	}{
		{"serviceaccount-token", shared.Controllers().Config(controllers.Namespace)},
		{"client-certificate", kcm},
		{"admin-token", shared.RESTConfig()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, err := kubernetes.NewForConfig(bc.cfg)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := c.CoreV1().ConfigMaps("default").Get(b.Context(), "bench-credentials", metav1.GetOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
