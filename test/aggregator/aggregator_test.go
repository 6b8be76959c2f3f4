// Package aggregator_test tests the aggregation layer as clients and
// extension API servers see it: a real extension server over TLS on
// 127.0.0.1, registered by an APIService, reached through kite's API with
// client-go and kubectl, against one shared server (kitetest.Main).
package aggregator_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/controllers"
	"github.com/kite-project/kite/kitetest"
	"github.com/kite-project/kite/pki"
)

var shared *kite.Server

func TestMain(m *testing.M) {
	kitetest.MainWith(m, kite.Options{Controllers: []string{controllers.ServiceAccount}}, func(s *kite.Server) { shared = s })
}

const (
	group   = "wardle.example.com"
	version = "v1alpha1"
)

// seen is what the extension server saw of one request.
type seen struct {
	path, user, uid, authorization, clientCN string
	groups                                   []string
}

// extension is an extension API server as sample-apiserver would be: it
// trusts the front-proxy CA and the allowed names of the
// extension-apiserver-authentication ConfigMap, and takes the user from
// the X-Remote-* headers.
type extension struct {
	srv   *httptest.Server
	caPEM []byte
	mu    sync.Mutex
	seen  []seen
}

func newExtension(t *testing.T, serviceHost string) *extension {
	t.Helper()
	cm, err := kubernetes.NewForConfigOrDie(shared.RESTConfig()).CoreV1().ConfigMaps("kube-system").Get(t.Context(), kite.ExtensionAuthenticationConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var allowed []string
	if err := json.Unmarshal([]byte(cm.Data["requestheader-allowed-names"]), &allowed); err != nil {
		t.Fatalf("requestheader-allowed-names: %v", err)
	}
	clientCAs := x509.NewCertPool()
	if !clientCAs.AppendCertsFromPEM([]byte(cm.Data["requestheader-client-ca-file"])) {
		t.Fatal("requestheader-client-ca-file holds no certificate")
	}
	bundle, err := pki.Ensure(t.TempDir(), pki.Options{Hosts: []string{serviceHost}})
	if err != nil {
		t.Fatal(err)
	}
	e := &extension{caPEM: bundle.CAPEM}
	e.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := seen{path: r.URL.Path, user: r.Header.Get("X-Remote-User"), uid: r.Header.Get("X-Remote-Uid"),
			groups: r.Header.Values("X-Remote-Group"), authorization: r.Header.Get("Authorization")}
		if len(r.TLS.VerifiedChains) > 0 {
			s.clientCN = r.TLS.VerifiedChains[0][0].Subject.CommonName
		}
		e.mu.Lock()
		e.seen = append(e.seen, s)
		e.mu.Unlock()
		if !slices.Contains(allowed, s.clientCN) {
			http.Error(w, "not the front proxy", http.StatusUnauthorized)
			return
		}
		e.serve(w, r, s)
	}))
	e.srv.TLS = bundle.TLSConfig.Clone()
	e.srv.TLS.ClientAuth = tls.VerifyClientCertIfGiven
	e.srv.TLS.ClientCAs = clientCAs
	e.srv.StartTLS()
	t.Cleanup(e.srv.Close)
	return e
}

func (e *extension) serve(w http.ResponseWriter, r *http.Request, s seen) {
	w.Header().Set("Content-Type", "application/json")
	base := "/apis/" + group + "/" + version
	switch {
	case r.URL.Path == base:
		json.NewEncoder(w).Encode(&metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: group + "/" + version,
			APIResources: []metav1.APIResource{
				{Name: "flunders", SingularName: "flunder", Namespaced: true, Kind: "Flunder", Verbs: []string{"get", "list", "watch"}, ShortNames: []string{"fl"}},
				{Name: "flunders/status", Namespaced: true, Kind: "Flunder", Verbs: []string{"get"}},
			},
		})
	case strings.HasSuffix(r.URL.Path, "/flunders") && r.URL.Query().Get("watch") == "true":
		// One event, then the stream stays open: the client must get the
		// event while it does.
		fmt.Fprintf(w, `{"type":"ADDED","object":%s}`+"\n", flunder("w1", namespaceOf(r.URL.Path), s.user))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	case strings.HasSuffix(r.URL.Path, "/flunders"):
		fmt.Fprintf(w, `{"kind":"FlunderList","apiVersion":"%s/%s","metadata":{"resourceVersion":"1"},"items":[%s]}`, group, version, flunder("f1", namespaceOf(r.URL.Path), s.user))
	default:
		http.Error(w, "not found", http.StatusNotFound)
	}
}

func flunder(name, namespace, user string) string {
	return fmt.Sprintf(`{"kind":"Flunder","apiVersion":"%s/%s","metadata":{"name":%q,"namespace":%q,"creationTimestamp":"2026-12-06T00:00:00Z","annotations":{"seen-user":%q}}}`, group, version, name, namespace, user)
}

// namespaceOf is the namespace of a /apis/<g>/<v>/namespaces/<ns>/... path.
func namespaceOf(path string) string {
	_, rest, _ := strings.Cut(path, "/namespaces/")
	ns, _, _ := strings.Cut(rest, "/")
	return ns
}

func (e *extension) requests() []seen {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.seen)
}

func (e *extension) port(t *testing.T) int32 {
	_, p, _ := net.SplitHostPort(e.srv.Listener.Addr().String())
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return int32(n)
}

// register makes the Service (ExternalName localhost, on the extension's
// port: how a test reaches 127.0.0.1) and the APIService of group/version
// in a namespace of its own, and returns the namespace.
func register(t *testing.T, e func(ns string) *extension) (string, *extension) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(shared.RESTConfig())
	ns, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "agg-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ext := e(ns.Name)
	if _, err := cs.CoreV1().Services(ns.Name).Create(t.Context(), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "api"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost", Ports: []corev1.ServicePort{{Port: ext.port(t)}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	port := ext.port(t)
	agg := aggregatorclient.NewForConfigOrDie(shared.RESTConfig()).ApiregistrationV1().APIServices()
	if _, err := agg.Create(t.Context(), &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: version + "." + group},
		Spec: apiregistrationv1.APIServiceSpec{
			Group: group, Version: version, GroupPriorityMinimum: 2000, VersionPriority: 200,
			Service:  &apiregistrationv1.ServiceReference{Namespace: ns.Name, Name: "api", Port: &port},
			CABundle: ext.caPEM,
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		agg.Delete(context.Background(), version+"."+group, metav1.DeleteOptions{})
	})
	return ns.Name, ext
}

// waitAvailable waits until the APIService's Available condition has
// status and reason.
func waitAvailable(t *testing.T, status apiregistrationv1.ConditionStatus, reason string) apiregistrationv1.APIServiceCondition {
	t.Helper()
	agg := aggregatorclient.NewForConfigOrDie(shared.RESTConfig()).ApiregistrationV1().APIServices()
	var last apiregistrationv1.APIServiceCondition
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		svc, err := agg.Get(ctx, version+"."+group, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range svc.Status.Conditions {
			if c.Type == apiregistrationv1.Available {
				last = c
			}
		}
		return last.Status == status && last.Reason == reason, nil
	})
	if err != nil {
		t.Fatalf("APIService Available %s/%s: last %+v: %v", status, reason, last, err)
	}
	return last
}

func TestAnAPIServiceIsServedByItsExtensionServer(t *testing.T) {
	ns, ext := register(t, func(ns string) *extension { return newExtension(t, "api."+ns+".svc") })
	waitAvailable(t, apiregistrationv1.ConditionTrue, "Passed")

	cfg := shared.RESTConfig()
	cs := kubernetes.NewForConfigOrDie(cfg)
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	me := review.Status.UserInfo

	t.Run("requests reach the server as the user, without the client's credentials", func(t *testing.T) {
		before := len(ext.requests())
		raw, err := cs.RESTClient().Get().AbsPath("/apis", group, version, "namespaces", ns, "flunders").DoRaw(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(raw), `"seen-user":"`+me.Username+`"`) {
			t.Errorf("list %s, want the item the server made for %q", raw, me.Username)
		}
		got := ext.requests()[before:]
		if len(got) != 1 {
			t.Fatalf("the server saw %d requests, want 1: %+v", len(got), got)
		}
		s := got[0]
		if s.user != me.Username || !slices.Equal(s.groups, me.Groups) || s.uid != me.UID {
			t.Errorf("the server saw user %q uid %q groups %q, want %q %q %q", s.user, s.uid, s.groups, me.Username, me.UID, me.Groups)
		}
		if s.authorization != "" {
			t.Errorf("the client's Authorization header reached the extension server: %q", s.authorization)
		}
		if s.clientCN != pki.FrontProxyClientCommonName {
			t.Errorf("client certificate %q, want the front proxy's", s.clientCN)
		}
	})

	t.Run("discovery lists the group, its version and its resources", func(t *testing.T) {
		dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
		groups, resources, err := dc.ServerGroupsAndResources()
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, g := range groups {
			if g.Name == group {
				found = g.PreferredVersion.Version == version
			}
		}
		if !found {
			t.Errorf("aggregated discovery has no group %s with preferred version %s", group, version)
		}
		var names []string
		for _, l := range resources {
			if l.GroupVersion == group+"/"+version {
				for _, r := range l.APIResources {
					names = append(names, r.Name)
				}
			}
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"flunders", "flunders/status"}) {
			t.Errorf("resources of %s/%s: %q", group, version, names)
		}
		// The legacy documents, as kubectl of old asks for them.
		raw, err := cs.RESTClient().Get().AbsPath("/apis", group).SetHeader("Accept", "application/json").DoRaw(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var g metav1.APIGroup
		if err := json.Unmarshal(raw, &g); err != nil || g.Name != group || g.PreferredVersion.GroupVersion != group+"/"+version {
			t.Errorf("/apis/%s: %s (%v)", group, raw, err)
		}
		raw, err = cs.RESTClient().Get().AbsPath("/apis").SetHeader("Accept", "application/json").DoRaw(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(raw), `"name":"`+group+`"`) {
			t.Errorf("/apis lacks %s", group)
		}
	})

	t.Run("kubectl gets the extension's resources", func(t *testing.T) {
		out, err := exec.CommandContext(t.Context(), "kubectl", "--kubeconfig", shared.KubeconfigPath(), "get", "flunders", "-n", ns).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl get flunders: %v: %s", err, out)
		}
		if !strings.Contains(string(out), "f1") {
			t.Errorf("kubectl get flunders: %s", out)
		}
	})

	t.Run("a watch streams its events as they come", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		body, err := cs.RESTClient().Get().AbsPath("/apis", group, version, "namespaces", ns, "flunders").Param("watch", "true").Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer body.Close()
		line, err := bufio.NewReader(body).ReadString('\n')
		if err != nil {
			t.Fatalf("the first event did not come while the watch was open: %v", err)
		}
		if !strings.Contains(line, `"name":"w1"`) {
			t.Errorf("first event %s", line)
		}
	})

	t.Run("a user the API does not authorize is refused before the server", func(t *testing.T) {
		before := len(ext.requests())
		userCfg, err := shared.AddUser("nobody-agg", nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = kubernetes.NewForConfigOrDie(userCfg).RESTClient().Get().AbsPath("/apis", group, version, "namespaces", ns, "flunders").DoRaw(t.Context())
		if !apierrors.IsForbidden(err) {
			t.Errorf("err %v, want 403", err)
		}
		if n := len(ext.requests()) - before; n != 0 {
			t.Errorf("the extension server saw %d requests of a refused user", n)
		}
	})

	t.Run("a server that stops answering makes its APIService unavailable and its requests 503", func(t *testing.T) {
		ext.srv.Close()
		body, err := cs.RESTClient().Get().AbsPath("/apis", group, version, "namespaces", ns, "flunders").DoRaw(t.Context())
		if !apierrors.IsServiceUnavailable(err) || !strings.Contains(string(body), "error trying to reach service") {
			t.Errorf("err %v, body %q, want the proxy's 503", err, body)
		}
		cond := waitAvailable(t, apiregistrationv1.ConditionFalse, "FailedDiscoveryCheck")
		if !strings.Contains(cond.Message, "failing or missing response from") {
			t.Errorf("message %q", cond.Message)
		}
		_, err = cs.RESTClient().Get().AbsPath("/apis", group, version, "namespaces", ns, "flunders").DoRaw(t.Context())
		if !apierrors.IsServiceUnavailable(err) {
			t.Errorf("err %v, want 503 service unavailable", err)
		}
	})

	t.Run("a deleted APIService takes its group out of the API", func(t *testing.T) {
		agg := aggregatorclient.NewForConfigOrDie(cfg).ApiregistrationV1().APIServices()
		if err := agg.Delete(t.Context(), version+"."+group, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := cs.RESTClient().Get().AbsPath("/apis", group, version, "namespaces", ns, "flunders").DoRaw(ctx)
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Fatalf("the group is still served after its APIService was deleted: %v", err)
		}
		raw, err := cs.RESTClient().Get().AbsPath("/apis").SetHeader("Accept", "application/json").DoRaw(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), `"name":"`+group+`"`) {
			t.Errorf("/apis still lists %s", group)
		}
	})
}

// TestAPIServiceConditionsSayWhatIsMissing: the Available condition's
// reasons and messages are upstream's when the Service is missing or has
// no endpoints.
func TestAPIServiceConditionsSayWhatIsMissing(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(shared.RESTConfig())
	ns, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "agg-missing-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	port := int32(443)
	agg := aggregatorclient.NewForConfigOrDie(shared.RESTConfig()).ApiregistrationV1().APIServices()
	if _, err := agg.Create(t.Context(), &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1beta9.missing.example.com"},
		Spec: apiregistrationv1.APIServiceSpec{Group: "missing.example.com", Version: "v1beta9", GroupPriorityMinimum: 100, VersionPriority: 10,
			Service: &apiregistrationv1.ServiceReference{Namespace: ns.Name, Name: "api", Port: &port}, InsecureSkipTLSVerify: true},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agg.Delete(context.Background(), "v1beta9.missing.example.com", metav1.DeleteOptions{}) })
	wait := func(reason, message string) {
		t.Helper()
		var last apiregistrationv1.APIServiceCondition
		err := waitPoll(t, func(ctx context.Context) (bool, error) {
			svc, err := agg.Get(ctx, "v1beta9.missing.example.com", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range svc.Status.Conditions {
				last = c
			}
			return last.Reason == reason, nil
		})
		if err != nil || last.Status != apiregistrationv1.ConditionFalse || last.Message != message {
			t.Fatalf("condition %+v, want False %s %q (%v)", last, reason, message, err)
		}
	}
	wait("ServiceNotFound", fmt.Sprintf("service/api in %q is not present", ns.Name))
	// Requests for the group meanwhile: 503, as upstream's proxy says.
	_, err = cs.RESTClient().Get().AbsPath("/apis/missing.example.com/v1beta9").DoRaw(t.Context())
	if !apierrors.IsServiceUnavailable(err) {
		t.Errorf("err %v, want 503", err)
	}
	if _, err := cs.CoreV1().Services(ns.Name).Create(t.Context(), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "api"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No controller fills the Service's EndpointSlices here.
	wait("EndpointsNotFound", fmt.Sprintf("cannot find endpointslices for service/api in %q", ns.Name))
}

func waitPoll(t *testing.T, cond func(context.Context) (bool, error)) error {
	return wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 20*time.Second, true, cond)
}
