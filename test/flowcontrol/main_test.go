// Package flowcontrol_test tests API priority and fairness against a real
// server: the bootstrap objects and their producer, the classification
// headers, FlowSchemas users create, limits, queuing and exemption. The
// shared server has 2 seats in all (--max-requests-inflight=1,
// --max-mutating-requests-inflight=1), so a level of few shares gets one
// seat; the tests' users are impersonated by the admin and bound to
// cluster-admin, each with a FlowSchema of its own.
package flowcontrol_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/kitetest"
)

var shared *kite.Server

func TestMain(m *testing.M) {
	kitetest.MainWith(m, kite.Options{Controllers: []string{}, MaxRequestsInFlight: 1, MaxMutatingRequestsInFlight: 1},
		func(s *kite.Server) { shared = s })
}

func admin(t testing.TB) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(shared.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// as is the admin's configuration impersonating name (authenticated, no
// other group).
func as(name string) *rest.Config {
	cfg := shared.RESTConfig()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: name, Groups: []string{user.AllAuthenticated}}
	return cfg
}

// httpAs is a plain HTTP client of name: requests whose bodies the test
// controls.
func httpAs(t *testing.T, name string) *http.Client {
	t.Helper()
	c, err := restHTTP(as(name))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// restHTTP is the plain HTTP client of cfg.
func restHTTP(cfg *rest.Config) (*http.Client, error) { return rest.HTTPClientFor(cfg) }

// level makes a limited priority level of one share (one seat of the
// shared server's 2, none lent or borrowed) and a FlowSchema sending
// every request of userName to it, and waits until the server uses them
// (a request of the user carries the level's UID). queues 0 means
// Reject. It returns the level's and the schema's UIDs.
func level(t *testing.T, name, userName string, queues int32) (types.UID, types.UID) {
	t.Helper()
	ctx := t.Context()
	cs := admin(t)
	lr := flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}
	if queues > 0 {
		lr = flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
			Queuing: &flowcontrolv1.QueuingConfiguration{Queues: queues, HandSize: 1, QueueLengthLimit: 10}}
	}
	pl, err := cs.FlowcontrolV1().PriorityLevelConfigurations().Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To(int32(1)),
				LendablePercent: ptr.To(int32(0)), BorrowingLimitPercent: ptr.To(int32(0)), LimitResponse: lr}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := cs.FlowcontrolV1().FlowSchemas().Create(ctx, schemaFor(name, name, userName), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: userName}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = cs.FlowcontrolV1().FlowSchemas().Delete(ctx, name, metav1.DeleteOptions{})
		_ = cs.FlowcontrolV1().PriorityLevelConfigurations().Delete(ctx, name, metav1.DeleteOptions{})
		_ = cs.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
	})
	c := httpAs(t, userName)
	eventually(t, fmt.Sprintf("requests of %s classified by %s and authorized", userName, name), func() bool {
		code, h := get(t, c, "/api/v1/namespaces/default/configmaps")
		return code == http.StatusOK && h.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID) == string(pl.UID)
	})
	return pl.UID, fs.UID
}

// schemaFor sends every request of userName to level pl, before the
// suggested schemas (precedence 100).
func schemaFor(name, pl, userName string) *flowcontrolv1.FlowSchema {
	return &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: pl},
			MatchingPrecedence:         100,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: userName}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"},
					ClusterScope: true, Namespaces: []string{"*"}}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
			}},
		},
	}
}

// get does a GET of path and returns the status and headers.
func get(t *testing.T, c *http.Client, path string) (int, http.Header) {
	t.Helper()
	resp, err := c.Get(shared.RESTConfig().Host + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("never: %s", what)
}

// held is a request in flight: a create whose body the test has not
// finished sending, holding its seat until finish.
type held struct {
	name string
	body *io.PipeWriter
	done chan int // its status
}

// padding is sent before the body's content: more than the HTTP/2 stream
// window (256 KiB) and the client's buffer together, so that its write
// returns only once the handler reads the body, which it does holding a
// seat (priority and fairness runs before it).
const padding = 1536 << 10

// hold starts a create of ConfigMap name as c and returns once the
// handler reads its body.
func hold(t *testing.T, c *http.Client, name string) *held {
	t.Helper()
	pr, pw := io.Pipe()
	h := &held{name: name, body: pw, done: make(chan int, 1)}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, shared.RESTConfig().Host+"/api/v1/namespaces/default/configmaps", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	go func() {
		resp, err := c.Do(req)
		if err != nil {
			h.done <- 0
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		h.done <- resp.StatusCode
	}()
	t.Cleanup(func() {
		_ = pw.CloseWithError(io.ErrUnexpectedEOF)
		_ = admin(t).CoreV1().ConfigMaps("default").Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	if _, err := pw.Write(append([]byte("{"), bytes.Repeat([]byte(" "), padding)...)); err != nil {
		t.Fatal(err)
	}
	return h
}

// finish sends the rest of the body and returns the create's status.
func (h *held) finish(t *testing.T) int {
	t.Helper()
	if _, err := fmt.Fprintf(h.body, `"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q}}`, h.name); err != nil {
		t.Fatal(err)
	}
	h.body.Close()
	return <-h.done
}
