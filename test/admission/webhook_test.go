package admission_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// hookServer is an HTTPS admission webhook on 127.0.0.1: decide answers
// each review (the request as the webhook got it, by path); every request
// is recorded.
type hookServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []reviewed
	// handling is how long the last request took the handler, from its
	// body read to its answer written (ns).
	handling atomic.Int64
}

type reviewed struct {
	path       string
	query      string
	apiVersion string
	req        *admissionv1.AdmissionRequest
}

func newHookServer(t testing.TB, decide func(path string, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) *hookServer {
	t.Helper()
	h := &hookServer{}
	h.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		defer func() { h.handling.Store(int64(time.Since(start))) }()
		body, _ := io.ReadAll(r.Body)
		var review admissionv1.AdmissionReview // v1beta1 has the same JSON shape
		if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.requests = append(h.requests, reviewed{r.URL.Path, r.URL.RawQuery, review.APIVersion, review.Request})
		h.mu.Unlock()
		resp := decide(r.URL.Path, review.Request)
		resp.UID = review.Request.UID
		out := map[string]any{"apiVersion": review.APIVersion, "kind": "AdmissionReview", "response": resp}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookServer) caBundle() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.Certificate().Raw})
}

func (h *hookServer) seen(path, name string) []reviewed {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []reviewed
	for _, r := range h.requests {
		if r.path == path && r.req.Name == name {
			out = append(out, r)
		}
	}
	return out
}

func allow() *admissionv1.AdmissionResponse { return &admissionv1.AdmissionResponse{Allowed: true} }

// webhookNamespace returns a namespace labelled so that only this test's
// webhooks (namespaceSelector adm-webhook=<name>) see its objects.
func webhookNamespace(t testing.TB, client kubernetes.Interface) string {
	t.Helper()
	ns, err := client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "hook-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Labels = map[string]string{"adm-webhook": ns.Name}
	if _, err := client.CoreV1().Namespaces().Update(t.Context(), ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func configMapRule(ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{Operations: ops, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}
}

func validatingHook(name string, h *hookServer, path, ns string) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		Name: name, ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(h.URL + path), CABundle: h.caBundle()},
		Rules:                   configMapRule(admissionregistrationv1.Create, admissionregistrationv1.Update),
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
		NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"adm-webhook": ns}},
	}
}

func mutatingHook(name string, h *hookServer, path, ns string) admissionregistrationv1.MutatingWebhook {
	v := validatingHook(name, h, path, ns)
	return admissionregistrationv1.MutatingWebhook{Name: v.Name, ClientConfig: v.ClientConfig, Rules: v.Rules, SideEffects: v.SideEffects,
		AdmissionReviewVersions: v.AdmissionReviewVersions, NamespaceSelector: v.NamespaceSelector}
}

// installValidating creates the configuration, removes it when the test
// ends, and waits until the server calls it (its configurations come from
// the watch cache, a moment behind the create).
func installValidating(t testing.TB, client kubernetes.Interface, ns string, h *hookServer, hooks ...admissionregistrationv1.ValidatingWebhook) {
	t.Helper()
	c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: ns + "-v"}, Webhooks: hooks}
	if _, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(t.Context(), c, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create validating configuration: %v", err)
	}
	t.Cleanup(func() {
		_ = client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), c.Name, metav1.DeleteOptions{})
	})
	waitCalled(t, client, ns, h, hooks[0].ClientConfig.URL)
}

func installMutating(t testing.TB, client kubernetes.Interface, ns string, h *hookServer, hooks ...admissionregistrationv1.MutatingWebhook) {
	t.Helper()
	c := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: ns + "-m"}, Webhooks: hooks}
	if _, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(t.Context(), c, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create mutating configuration: %v", err)
	}
	t.Cleanup(func() {
		_ = client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), c.Name, metav1.DeleteOptions{})
	})
	waitCalled(t, client, ns, h, hooks[0].ClientConfig.URL)
}

// waitCalled dry-runs the create of configMap "probe" until the webhook at
// url has seen it.
func waitCalled(t testing.TB, client kubernetes.Interface, ns string, h *hookServer, url *string) {
	t.Helper()
	path := strings.TrimPrefix(*url, h.URL)
	deadline := time.Now().Add(10 * time.Second)
	for len(h.seen(path, "probe")) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the webhook at %s was never called", path)
		}
		_, _ = client.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, metav1.CreateOptions{DryRun: dryRunAll})
		time.Sleep(10 * time.Millisecond)
	}
}

// warnings collects Warning headers.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

// TestValidatingWebhookDeniesWithItsCodeAndMessage: a denial reaches the
// client with the webhook's code and upstream's message, warnings come as
// Warning headers, the webhook sees the request as upstream sends it
// (AdmissionReview v1, kind, resource, user, options, dryRun), and a
// denied create stores nothing.
func TestValidatingWebhookDeniesWithItsCodeAndMessage(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := webhookNamespace(t, client)
	h := newHookServer(t, func(_ string, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if strings.Contains(string(req.Object.Raw), `"bad"`) {
			return &admissionv1.AdmissionResponse{Allowed: false, Warnings: []string{"bad things"}, Result: &metav1.Status{Code: http.StatusForbidden, Message: "no bad keys", Reason: metav1.StatusReasonForbidden}}
		}
		return &admissionv1.AdmissionResponse{Allowed: true, Warnings: []string{"checked by the test"}}
	})
	installValidating(t, client, ns, h, validatingHook("deny.adm.example.com", h, "/validate", ns))

	w := &warnings{}
	cfg := rest.CopyConfig(config(t))
	cfg.WarningHandler = w
	wc := kubernetes.NewForConfigOrDie(cfg)
	_, err := wc.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "denied"}, Data: map[string]string{"bad": "1"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || err.Error() != `admission webhook "deny.adm.example.com" denied the request: no bad keys` {
		t.Errorf("denied create: %v, want 403 with upstream's message", err)
	}
	if _, err := client.CoreV1().ConfigMaps(ns).Get(t.Context(), "denied", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the denied configMap was stored: %v", err)
	}
	if _, err := wc.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "good"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("allowed create: %v", err)
	}
	w.mu.Lock()
	if got := strings.Join(w.list, ";"); !strings.Contains(got, "bad things") || !strings.Contains(got, "checked by the test") {
		t.Errorf("warnings %q, want the webhook's", got)
	}
	w.mu.Unlock()
	seen := h.seen("/validate", "good")
	if len(seen) != 1 {
		t.Fatalf("the webhook saw %d requests for good, want 1", len(seen))
	}
	r := seen[0]
	if r.apiVersion != "admission.k8s.io/v1" || r.req.Kind.Kind != "ConfigMap" || r.req.Resource.Resource != "configmaps" || r.req.Operation != admissionv1.Create ||
		r.req.Namespace != ns || r.req.UserInfo.Username == "" || *r.req.DryRun || !strings.Contains(string(r.req.Options.Raw), `"kind":"CreateOptions"`) ||
		!strings.Contains(string(r.req.Object.Raw), `"kind":"ConfigMap"`) {
		t.Errorf("the webhook got %s %+v", r.apiVersion, r.req)
	}
}

// TestMutatingWebhookPatchesAndReinvokes: a JSONPatch response changes
// the stored object; a webhook with reinvocationPolicy IfNeeded runs again
// after a later one changed the object; AdmissionReview v1beta1 works.
func TestMutatingWebhookPatchesAndReinvokes(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := webhookNamespace(t, client)
	h := newHookServer(t, func(path string, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if path != "/label" || req.Name == "probe" {
			return allow()
		}
		pt := admissionv1.PatchTypeJSONPatch
		return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &pt, Patch: []byte(`[{"op":"add","path":"/metadata/labels","value":{"mutated":"yes"}}]`)}
	})
	first := mutatingHook("first.adm.example.com", h, "/first", ns)
	first.ReinvocationPolicy = ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy)
	label := mutatingHook("label.adm.example.com", h, "/label", ns)
	label.AdmissionReviewVersions = []string{"v1beta1"}
	installMutating(t, client, ns, h, first, label)

	out, err := client.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "m"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Labels["mutated"] != "yes" {
		t.Errorf("created labels %v, want the webhook's", out.Labels)
	}
	if n := len(h.seen("/first", "m")); n != 2 {
		t.Errorf("the IfNeeded webhook ran %d times, want 2", n)
	}
	if s := h.seen("/label", "m"); len(s) != 1 || s[0].apiVersion != "admission.k8s.io/v1beta1" {
		t.Errorf("the v1beta1 webhook saw %+v", s)
	}
}

// TestWebhookFailurePolicyTimeoutAndDryRun: an unreachable webhook fails
// the request under Fail and is skipped under Ignore; a slow one times
// out after timeoutSeconds, and each is told its timeout in the URL
// ("?timeout=1s", as upstream's; the conformance test looks for it in the
// error); under dry-run the webhook sees dryRun and nothing is stored.
func TestWebhookFailurePolicyTimeoutAndDryRun(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := webhookNamespace(t, client)
	h := newHookServer(t, func(path string, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if path == "/slow" && req.Name == "slow" {
			time.Sleep(2 * time.Second)
		}
		return allow()
	})
	ok := validatingHook("ok.adm.example.com", h, "/ok", ns)
	slow := validatingHook("slow.adm.example.com", h, "/slow", ns)
	slow.TimeoutSeconds = ptr.To[int32](1)
	dead := validatingHook("dead.adm.example.com", h, "/dead", ns)
	dead.ClientConfig.URL = ptr.To("https://127.0.0.1:1/dead")
	dead.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"dead": "yes"}}
	dead.FailurePolicy = ptr.To(admissionregistrationv1.Fail)
	ignored := dead
	ignored.Name = "ignored.adm.example.com"
	ignored.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"ignored": "yes"}}
	ignored.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	installValidating(t, client, ns, h, ok, slow, dead, ignored)

	cms := client.CoreV1().ConfigMaps(ns)
	_, err := cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "d", Labels: map[string]string{"dead": "yes"}}}, metav1.CreateOptions{})
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), `failed calling webhook "dead.adm.example.com"`) {
		t.Errorf("create past an unreachable webhook with failurePolicy Fail: %v", err)
	}
	if _, err := cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "i", Labels: map[string]string{"ignored": "yes"}}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("create past an unreachable webhook with failurePolicy Ignore: %v", err)
	}
	start := time.Now()
	_, err = cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "slow"}}, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), `failed calling webhook "slow.adm.example.com"`) || !strings.Contains(err.Error(), "/slow?timeout=1s") ||
		time.Since(start) > 1900*time.Millisecond {
		t.Errorf("create past a webhook slower than its timeout: %v after %v", err, time.Since(start))
	}
	if _, err := cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dry"}}, metav1.CreateOptions{DryRun: dryRunAll}); err != nil {
		t.Fatalf("dry-run create: %v", err)
	}
	if s := h.seen("/ok", "dry"); len(s) != 1 || !*s[0].req.DryRun || s[0].query != "timeout=10s" {
		t.Errorf("the webhook saw the dry run as %+v, want dryRun true and the default timeout=10s", s)
	}
	if _, err := cms.Get(t.Context(), "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("dry-run create stored: %v", err)
	}
}

// TestWebhookSelectorsAndMatchConditions: the objectSelector and the
// matchConditions decide which objects a webhook sees; other namespaces
// (namespaceSelector) are never sent.
func TestWebhookSelectorsAndMatchConditions(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := webhookNamespace(t, client)
	other := newNamespace(t, client)
	h := newHookServer(t, func(string, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse { return allow() })
	sel := validatingHook("sel.adm.example.com", h, "/sel", ns)
	sel.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "not-skipped", Expression: "object.metadata.name != 'skipped'"}}
	installValidating(t, client, ns, h, sel)
	for _, name := range []string{"seen", "skipped"} {
		if _, err := client.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.CoreV1().ConfigMaps(other).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"seen": 1, "skipped": 0, "elsewhere": 0} {
		if got := len(h.seen("/sel", name)); got != want {
			t.Errorf("%s: the webhook saw it %d times, want %d", name, got, want)
		}
	}
}

// TestWebhookConfigurationsAreNotSubjectToWebhooks: a webhook on every
// resource that fails every call still lets webhook configurations be
// written (it does stop a configMap, which shows it matches).
func TestWebhookConfigurationsAreNotSubjectToWebhooks(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := webhookNamespace(t, client)
	h := newHookServer(t, func(string, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse { return allow() })
	probe := validatingHook("probe.adm.example.com", h, "/probe", ns)
	all := validatingHook("all.adm.example.com", h, "/all", ns)
	all.ClientConfig.URL = ptr.To("https://127.0.0.1:1/all")
	all.Rules = []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/*"}}}}
	all.NamespaceSelector = nil
	all.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"adm-all": ns}}
	installValidating(t, client, ns, h, probe, all)
	labels := map[string]string{"adm-all": ns}
	if _, err := client.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: labels}}, metav1.CreateOptions{}); !apierrors.IsInternalError(err) {
		t.Fatalf("configMap under the failing webhook: %v, want its 500", err)
	}
	c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: ns + "-exempt", Labels: labels}, Webhooks: []admissionregistrationv1.ValidatingWebhook{probe}}
	if _, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(t.Context(), c, metav1.CreateOptions{}); err != nil {
		t.Errorf("a webhook configuration under the failing webhook: %v", err)
	}
	if err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(t.Context(), c.Name, metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete it: %v", err)
	}
}

// TestWebhookOnConnect: a validating webhook on CONNECT of pods/attach
// and pods/exec sees the request's options (PodAttachOptions,
// PodExecOptions) before anything is connected, as upstream's
// ConnectResource: its denial is the client's answer (the conformance
// test "should be able to deny attaching pod"), and an allowed request
// goes on (to a 404 here: the pod does not exist).
func TestWebhookOnConnect(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := webhookNamespace(t, client)
	h := newHookServer(t, func(_ string, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if req.Kind.Kind == "PodAttachOptions" && strings.Contains(string(req.Object.Raw), `"container":"container1"`) {
			return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Message: "attaching to pod 'to-be-attached-pod' is not allowed"}}
		}
		if req.Kind.Kind == "PodProxyOptions" && strings.Contains(string(req.Object.Raw), `"path":"/forbidden"`) {
			return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Message: "proxying to /forbidden is not allowed"}}
		}
		return allow()
	})
	connect := validatingHook("connect.adm.example.com", h, "/connect", ns)
	connect.Rules = []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Connect},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/attach", "pods/exec", "pods/proxy"}}}}
	probe := validatingHook("probe.adm.example.com", h, "/probe", ns)
	installValidating(t, client, ns, h, probe, connect)

	post := func(sub, name string, params map[string]string) error {
		req := client.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name(name).SubResource(sub)
		for k, v := range params {
			req = req.Param(k, v)
		}
		return req.Do(t.Context()).Error()
	}
	err := post("attach", "to-be-attached-pod", map[string]string{"container": "container1", "stdin": "true"})
	// No code in the denial: upstream's 400.
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `admission webhook "connect.adm.example.com" denied the request: attaching to pod 'to-be-attached-pod' is not allowed`) {
		t.Errorf("attach: %v, want the webhook's denial", err)
	}
	if err := post("exec", "missing", map[string]string{"command": "ls", "stdout": "true"}); !apierrors.IsNotFound(err) {
		t.Errorf("exec past an allowing webhook: %v, want the missing pod's 404", err)
	}
	// pods/proxy is a CONNECT too, admitted with its PodProxyOptions
	// before the pod is looked up.
	err = client.CoreV1().RESTClient().Get().Namespace(ns).Resource("pods").Name("nowhere").SubResource("proxy", "forbidden").Do(t.Context()).Error()
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `admission webhook "connect.adm.example.com" denied the request: proxying to /forbidden is not allowed`) {
		t.Errorf("pods/proxy: %v, want the webhook's denial", err)
	}
	seen := h.seen("/connect", "missing")
	if len(seen) != 1 {
		t.Fatalf("the webhook saw %d exec requests, want 1", len(seen))
	}
	r := seen[0].req
	if r.Operation != admissionv1.Connect || r.SubResource != "exec" || r.Kind.Kind != "PodExecOptions" || r.Namespace != ns ||
		!strings.Contains(string(r.Object.Raw), `"command":["ls"]`) || !strings.Contains(string(r.Object.Raw), `"kind":"PodExecOptions"`) {
		t.Errorf("the webhook got %+v with %s", r, r.Object.Raw)
	}
}
