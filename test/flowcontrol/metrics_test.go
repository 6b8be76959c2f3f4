package flowcontrol_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite"
)

// metric reads one sample of srv's /metrics (as the admin): the line
// name{labels} (labels in Prometheus' sorted order); -1 when absent.
func metric(t *testing.T, srv *kite.Server, name, labels string) float64 {
	t.Helper()
	c, err := rest.HTTPClientFor(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Get(srv.RESTConfig().Host + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	prefix := name + "{" + labels + "} "
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return -1
}

// TestFlowcontrolMetricsAsUpstream: a level of one seat without queues
// shows its seats, the request it executes, and the one it rejects, in
// upstream's apiserver_flowcontrol_* metrics with upstream's labels.
func TestFlowcontrolMetricsAsUpstream(t *testing.T) {
	level(t, "apf-metrics", "apf-metrics-user", 0)
	c := httpAs(t, "apf-metrics-user")
	pf := `flow_schema="apf-metrics",priority_level="apf-metrics"`
	if got := metric(t, shared, "apiserver_flowcontrol_nominal_limit_seats", `priority_level="apf-metrics"`); got != 1 {
		t.Errorf("nominal_limit_seats: %v, want 1", got)
	}
	first := hold(t, c, "apf-metrics-first")
	if got := metric(t, shared, "apiserver_flowcontrol_current_executing_requests", pf); got != 1 {
		t.Errorf("current_executing_requests while one is held: %v, want 1", got)
	}
	if got := metric(t, shared, "apiserver_flowcontrol_current_executing_seats", pf); got != 1 {
		t.Errorf("current_executing_seats while one is held: %v, want 1", got)
	}
	if code, _ := get(t, c, "/api/v1/namespaces/default/configmaps"); code != http.StatusTooManyRequests {
		t.Fatalf("second request: %d, want 429", code)
	}
	if code := first.finish(t); code != http.StatusCreated {
		t.Fatalf("first request: %d", code)
	}
	for _, m := range []struct {
		name, labels string
		want         float64
	}{
		{"apiserver_flowcontrol_rejected_requests_total", pf + `,reason="concurrency-limit"`, 1},
		{"apiserver_flowcontrol_request_wait_duration_seconds_count", `execute="false",` + pf, 1},
		{"apiserver_flowcontrol_current_executing_requests", pf, 0},
		{"apiserver_flowcontrol_current_inqueue_requests", pf, 0},
	} {
		if got := metric(t, shared, m.name, m.labels); got != m.want {
			t.Errorf("%s{%s}: %v, want %v", m.name, m.labels, got, m.want)
		}
	}
	// The level's FlowSchema was found by the requests that waited for
	// it to take effect (level), the first, and the 429's rejection.
	if got := metric(t, shared, "apiserver_flowcontrol_dispatched_requests_total", pf); got < 1 {
		t.Errorf("dispatched_requests_total: %v, want at least 1", got)
	}
}

// TestLargeListTakesMoreThanOneSeat: on a server of kube-apiserver's
// default seats (600), a list of 350 ConfigMaps by a user of the
// global-default level is estimated at more than one seat (upstream's
// 100 objects a seat: 4 from the cache, 8 from etcd, the level's most).
func TestLargeListTakesMoreThanOneSeat(t *testing.T) {
	ctx := t.Context()
	srv, err := kite.Start(ctx, kite.Options{DataDir: t.TempDir(), EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal", Controllers: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// Written in process: 350 creates over HTTP are slow on a busy machine.
	cms := srv.Resources().Store("configmaps")
	for i := range 350 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Namespace: "default"}}
		if _, err := cms.Create(context.WithoutCancel(ctx), "default", cm, &metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	admin, err := kubernetes.NewForConfig(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "lister"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "lister"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := srv.RESTConfig()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "lister", Groups: []string{user.AllAuthenticated}}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pf := `flow_schema="global-default",priority_level="global-default"`
	count := func() float64 { return metric(t, srv, "apiserver_flowcontrol_work_estimated_seats_count", pf) }
	atMost := func(le string) float64 {
		return metric(t, srv, "apiserver_flowcontrol_work_estimated_seats_bucket", pf+`,le="`+le+`"`)
	}
	// The RBAC binding reaches the authorizer's cache a moment later
	// (cluster-admin: view is aggregated, by a controller not run here).
	eventually(t, "the user may list", func() bool {
		_, err := cs.CoreV1().ConfigMaps("kube-public").List(ctx, metav1.ListOptions{})
		return err == nil
	})
	before, beforeOne := count(), atMost("1")
	list, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) < 350 {
		t.Fatalf("list: %v items, %v", len(list.Items), err)
	}
	if got := count() - before; got != 1 {
		t.Fatalf("estimates observed: %v, want 1", got)
	}
	if got := atMost("1") - beforeOne; got != 0 {
		t.Errorf("the list of 350 objects was estimated at one seat")
	}
}
