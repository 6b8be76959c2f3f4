package flowcontrol_test

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/apiserver/flowcontrol"
)

// TestBootstrapObjectsAsUpstream: the server keeps exactly kube-apiserver
// 1.37's mandatory and suggested objects.
func TestBootstrapObjectsAsUpstream(t *testing.T) {
	cs := admin(t).FlowcontrolV1()
	var wantPL, wantFS []string
	for _, pl := range append(slices.Clone(bootstrap.MandatoryPriorityLevelConfigurations), bootstrap.SuggestedPriorityLevelConfigurations...) {
		wantPL = append(wantPL, pl.Name)
	}
	for _, fs := range append(slices.Clone(bootstrap.MandatoryFlowSchemas), bootstrap.SuggestedFlowSchemas...) {
		wantFS = append(wantFS, fs.Name)
	}
	sort.Strings(wantPL)
	sort.Strings(wantFS)
	pls, err := cs.PriorityLevelConfigurations().List(t.Context(), metav1.ListOptions{LabelSelector: ""})
	if err != nil {
		t.Fatal(err)
	}
	fss, err := cs.FlowSchemas().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var gotPL, gotFS []string
	for _, pl := range pls.Items {
		if pl.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] == "true" {
			gotPL = append(gotPL, pl.Name)
		}
	}
	for _, fs := range fss.Items {
		if fs.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] == "true" {
			gotFS = append(gotFS, fs.Name)
		}
	}
	if !slices.Equal(gotPL, wantPL) {
		t.Errorf("priority levels %v, want %v", gotPL, wantPL)
	}
	if !slices.Equal(gotFS, wantFS) {
		t.Errorf("flow schemas %v, want %v", gotFS, wantFS)
	}
}

// TestProducerKeepsBootstrapObjects runs the producer's pass against the
// server: a deleted mandatory object comes back, a changed suggested one
// is reverted unless its annotation is false, a retired bootstrap object
// (annotation true, no longer bootstrapped) goes.
func TestProducerKeepsBootstrapObjects(t *testing.T) {
	ctx := t.Context()
	cs := admin(t).FlowcontrolV1()
	p := &flowcontrol.Producer{Client: cs}
	if err := cs.FlowSchemas().Delete(ctx, flowcontrolv1.FlowSchemaNameCatchAll, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wl, err := cs.PriorityLevelConfigurations().Get(ctx, "workload-low", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wl.Spec.Limited.NominalConcurrencyShares = ptr.To(int32(3))
	if _, err := cs.PriorityLevelConfigurations().Update(ctx, wl, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	gd, err := cs.PriorityLevelConfigurations().Get(ctx, "global-default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gd.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = "false"
	gd.Spec.Limited.NominalConcurrencyShares = ptr.To(int32(21))
	if _, err := cs.PriorityLevelConfigurations().Update(ctx, gd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		gd, err := cs.PriorityLevelConfigurations().Get(context.Background(), "global-default", metav1.GetOptions{})
		if err == nil {
			gd.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = "true"
			_, _ = cs.PriorityLevelConfigurations().Update(context.Background(), gd, metav1.UpdateOptions{})
			_ = p.Ensure(context.Background())
		}
	})
	retired := schemaFor("retired-bootstrap", "global-default", "nobody")
	retired.Annotations = map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: "true"}
	if _, err := cs.FlowSchemas().Create(ctx, retired, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := p.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.FlowSchemas().Get(ctx, flowcontrolv1.FlowSchemaNameCatchAll, metav1.GetOptions{}); err != nil {
		t.Errorf("the deleted catch-all FlowSchema: %v, want it back", err)
	}
	if wl, err := cs.PriorityLevelConfigurations().Get(ctx, "workload-low", metav1.GetOptions{}); err != nil || *wl.Spec.Limited.NominalConcurrencyShares != 100 {
		t.Errorf("workload-low changed (auto-updated): %v, want its 100 shares back", err)
	}
	if gd, err := cs.PriorityLevelConfigurations().Get(ctx, "global-default", metav1.GetOptions{}); err != nil || *gd.Spec.Limited.NominalConcurrencyShares != 21 {
		t.Errorf("global-default with autoupdate-spec false: %v, want the operator's 21 shares kept", err)
	}
	if _, err := cs.FlowSchemas().Get(ctx, "retired-bootstrap", metav1.GetOptions{}); err == nil {
		t.Errorf("a FlowSchema no longer bootstrapped, annotated true, was not deleted")
	}
}

// TestClassificationHeaders: responses name the UIDs of the FlowSchema
// and priority level a request was classified by: system:masters and
// health checks exempt, other users by the suggested schemas.
func TestClassificationHeaders(t *testing.T) {
	ctx := t.Context()
	cs := admin(t).FlowcontrolV1()
	uid := func(fs, pl string) [2]string {
		f, err := cs.FlowSchemas().Get(ctx, fs, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := cs.PriorityLevelConfigurations().Get(ctx, pl, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return [2]string{string(f.UID), string(p.UID)}
	}
	adminHTTP, err := restHTTP(shared.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		client *http.Client
		path   string
		want   [2]string
	}{
		{"system:masters", adminHTTP, "/api/v1/namespaces", uid("exempt", "exempt")},
		{"health check", httpAs(t, "apf-prober"), "/readyz", uid("probes", "exempt")},
		{"an authenticated user", httpAs(t, "apf-someone"), "/api/v1/namespaces", uid("global-default", "global-default")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, h := get(t, tt.client, tt.path)
			got := [2]string{h.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID), h.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID)}
			if got != tt.want {
				t.Errorf("X-Kubernetes-PF-FlowSchema-UID, -PriorityLevel-UID = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestUserFlowSchemaTakesEffect: a FlowSchema and level a user creates
// classify that user's requests (level waits for it) and get the Dangling
// condition False; one naming a missing level gets True.
func TestUserFlowSchemaTakesEffect(t *testing.T) {
	ctx := t.Context()
	_, fsUID := level(t, "apf-effect", "apf-effect-user", 0)
	cs := admin(t).FlowcontrolV1()
	_, h := get(t, httpAs(t, "apf-effect-user"), "/api/v1/namespaces")
	if got := h.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID); got != string(fsUID) {
		t.Errorf("FlowSchema UID %q, want the user's schema's %q", got, fsUID)
	}
	dangling := schemaFor("apf-dangling", "apf-no-such-level", "apf-nobody")
	if _, err := cs.FlowSchemas().Create(ctx, dangling, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.FlowSchemas().Delete(context.Background(), "apf-dangling", metav1.DeleteOptions{}) })
	for name, want := range map[string]flowcontrolv1.ConditionStatus{"apf-effect": flowcontrolv1.ConditionFalse, "apf-dangling": flowcontrolv1.ConditionTrue} {
		eventually(t, name+"'s Dangling condition "+string(want), func() bool {
			fs, err := cs.FlowSchemas().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range fs.Status.Conditions {
				if c.Type == flowcontrolv1.FlowSchemaConditionDangling && c.Status == want {
					return true
				}
			}
			return false
		})
	}
}

// TestOneSeatRejectsTheSecondRequest: a level of one seat and no queues
// (Reject) answers a second concurrent request with upstream's 429, and
// serves again once the first is done.
func TestOneSeatRejectsTheSecondRequest(t *testing.T) {
	level(t, "apf-reject", "apf-reject-user", 0)
	c := httpAs(t, "apf-reject-user")
	first := hold(t, c, "apf-reject-first")
	resp, err := c.Get(shared.RESTConfig().Host + "/api/v1/namespaces/default/configmaps")
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
		body != "Too many requests, please try again later.\n" {
		t.Errorf("second request: %d, Retry-After %q, %q; want 429, a Retry-After, upstream's message", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if code := first.finish(t); code != http.StatusCreated {
		t.Fatalf("first request: %d, want 201", code)
	}
	if code, _ := get(t, c, "/api/v1/namespaces/default/configmaps"); code != http.StatusOK {
		t.Errorf("after the first ended: %d, want 200", code)
	}
}

// TestQueuedRequestRunsWhenTheFirstEnds: a level of one seat with queues
// holds a second request until the first ends, then serves it.
func TestQueuedRequestRunsWhenTheFirstEnds(t *testing.T) {
	level(t, "apf-queue", "apf-queue-user", 4)
	c := httpAs(t, "apf-queue-user")
	first := hold(t, c, "apf-queue-first")
	second := make(chan int, 1)
	go func() {
		resp, err := c.Get(shared.RESTConfig().Host + "/api/v1/namespaces/default/configmaps")
		if err != nil {
			second <- 0
			return
		}
		resp.Body.Close()
		second <- resp.StatusCode
	}()
	select {
	case code := <-second:
		t.Fatalf("second request answered (%d) while the only seat is held", code)
	case <-time.After(300 * time.Millisecond):
	}
	if code := first.finish(t); code != http.StatusCreated {
		t.Fatalf("first request: %d, want 201", code)
	}
	if code := <-second; code != http.StatusOK {
		t.Errorf("queued request: %d, want 200", code)
	}
}

// TestWatchHoldsItsSeatOnlyWhileStarting: a watch of a one-seat level
// does not keep the seat once it has started.
func TestWatchHoldsItsSeatOnlyWhileStarting(t *testing.T) {
	level(t, "apf-watch", "apf-watch-user", 0)
	c := httpAs(t, "apf-watch-user")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, shared.RESTConfig().Host+"/api/v1/namespaces/default/configmaps?watch=true", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch: %d", resp.StatusCode)
	}
	if code, _ := get(t, c, "/api/v1/namespaces/default/configmaps"); code != http.StatusOK {
		t.Errorf("a request beside a running watch of a one-seat level: %d, want 200", code)
	}
}

// TestExemptRequestsAreNeverLimited: while a one-seat level is full,
// many concurrent requests of system:masters all succeed (the whole
// server has 2 seats).
func TestExemptRequestsAreNeverLimited(t *testing.T) {
	level(t, "apf-busy", "apf-busy-user", 0)
	first := hold(t, httpAs(t, "apf-busy-user"), "apf-busy-first")
	defer first.finish(t)
	c, err := restHTTP(shared.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	codes := make(chan int, 40)
	for range 40 {
		wg.Go(func() {
			resp, err := c.Get(shared.RESTConfig().Host + "/api/v1/namespaces/default/configmaps")
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		})
	}
	wg.Wait()
	close(codes)
	for code := range codes {
		if code != http.StatusOK {
			t.Fatalf("a request of system:masters: %d, want 200", code)
		}
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

// TestFloodingUserDoesNotStarveOthers: while one user floods its level
// (one seat held, many more requests queued and refused), another user's
// requests and a node's heartbeats (lease updates, level node-high) are
// all served: the flood stays within its level.
func TestFloodingUserDoesNotStarveOthers(t *testing.T) {
	ctx := t.Context()
	level(t, "apf-flood", "apf-flooder", 1)
	level(t, "apf-calm", "apf-calm-user", 0)
	flooder := httpAs(t, "apf-flooder")
	first := hold(t, flooder, "apf-flood-first")
	defer first.finish(t)

	floodCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var mu sync.Mutex
	rejected := 0
	for range 12 {
		wg.Go(func() {
			for floodCtx.Err() == nil {
				req, _ := http.NewRequestWithContext(floodCtx, http.MethodGet, shared.RESTConfig().Host+"/api/v1/namespaces/default/configmaps", nil)
				resp, err := flooder.Do(req)
				if err != nil {
					continue
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusTooManyRequests {
					mu.Lock()
					rejected++
					mu.Unlock()
				}
			}
		})
	}
	defer func() {
		stop()
		wg.Wait()
	}()

	cs := admin(t)
	lease, err := cs.CoordinationV1().Leases("kube-node-lease").Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "apf-node"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("apf-node")},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoordinationV1().Leases("kube-node-lease").Delete(context.Background(), "apf-node", metav1.DeleteOptions{})
	})
	nodeCfg := shared.RESTConfig()
	nodeCfg.Impersonate = rest.ImpersonationConfig{UserName: "system:node:apf-node", Groups: []string{user.NodesGroup, user.AllAuthenticated}}
	node, err := kubernetes.NewForConfig(nodeCfg)
	if err != nil {
		t.Fatal(err)
	}
	calm := httpAs(t, "apf-calm-user")
	var slowest time.Duration
	for i := range 20 {
		start := time.Now()
		if code, _ := get(t, calm, "/api/v1/namespaces/default/configmaps"); code != http.StatusOK {
			t.Fatalf("request %d of another user during the flood: %d, want 200", i, code)
		}
		if i%4 == 0 {
			lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
			if lease, err = node.CoordinationV1().Leases("kube-node-lease").Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("a node's heartbeat during the flood: %v", err)
			}
		}
		slowest = max(slowest, time.Since(start))
	}
	mu.Lock()
	defer mu.Unlock()
	if rejected == 0 {
		t.Error("the flooder was never refused: it did not flood its level")
	}
	t.Logf("the other user's slowest request (with a heartbeat): %s; the flooder refused %d times", slowest, rejected)
}
