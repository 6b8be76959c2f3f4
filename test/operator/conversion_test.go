package operator_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	"github.com/kite-project/kite"
)

// The operator's Gadget as kubebuilder would write it in two versions:
// v1 (the storage version) keeps "host:port" in one field, v2 splits it.
type gadgetV1 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		HostPort string `json:"hostPort,omitempty"`
	} `json:"spec"`
}

type gadgetV2 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Host string `json:"host,omitempty"`
		Port string `json:"port,omitempty"`
	} `json:"spec"`
}

func (g *gadgetV1) DeepCopyObject() runtime.Object {
	c := *g
	g.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

func (g *gadgetV2) DeepCopyObject() runtime.Object {
	c := *g
	g.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

var (
	gadgetsV1 = schema.GroupVersionResource{Group: "operator.example.com", Version: "v1", Resource: "gadgets"}
	gadgetsV2 = schema.GroupVersionResource{Group: "operator.example.com", Version: "v2", Resource: "gadgets"}
)

// gadgetConverter is the operator's conversion between the two versions.
type gadgetConverter struct{}

func (gadgetConverter) ConvertObject(_ context.Context, src, dst runtime.Object) error {
	switch s := src.(type) {
	case *gadgetV1:
		d := dst.(*gadgetV2)
		d.ObjectMeta = s.ObjectMeta
		d.Spec.Host, d.Spec.Port, _ = strings.Cut(s.Spec.HostPort, ":")
	case *gadgetV2:
		d := dst.(*gadgetV1)
		d.ObjectMeta = s.ObjectMeta
		d.Spec.HostPort = s.Spec.Host + ":" + s.Spec.Port
	default:
		return fmt.Errorf("cannot convert %T", src)
	}
	return nil
}

// conversionServer is the operator's conversion webhook (controller-
// runtime's handler) over TLS on 127.0.0.1, with a fault to inject in
// front of it and a record of what it was asked.
type conversionServer struct {
	*httptest.Server
	mu       sync.Mutex
	fault    string
	requests []apiextensionsv1.ConversionRequest
	reviews  []string // the reviews' apiVersions
	caBundle []byte
}

func newConversionServer(t testing.TB) *conversionServer {
	t.Helper()
	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(gadgetsV1.GroupVersion().WithKind("Gadget"), &gadgetV1{})
	scheme.AddKnownTypeWithName(gadgetsV2.GroupVersion().WithKind("Gadget"), &gadgetV2{})
	reg := conversion.NewRegistry()
	if err := reg.RegisterConverter(schema.GroupKind{Group: "operator.example.com", Kind: "Gadget"}, gadgetConverter{}); err != nil {
		t.Fatal(err)
	}
	handler := conversion.NewWebhookHandler(scheme, reg)
	s := &conversionServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		review := &apiextensionsv1.ConversionReview{}
		if err := json.Unmarshal(body, review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.requests = append(s.requests, *review.Request)
		s.reviews = append(s.reviews, review.APIVersion)
		fault := s.fault
		s.mu.Unlock()
		resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
		switch fault {
		case "":
			r.Body = io.NopCloser(strings.NewReader(string(body)))
			handler.ServeHTTP(w, r)
			return
		case "http":
			http.Error(w, "the webhook is down", http.StatusServiceUnavailable)
			return
		case "failure":
			resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: "gadget conversion is off"}
		case "uid":
			resp.UID = "not-the-request"
		case "count":
		case "name", "label":
			for _, raw := range review.Request.Objects {
				u := &unstructured.Unstructured{}
				_ = u.UnmarshalJSON(raw.Raw)
				u.SetAPIVersion(review.Request.DesiredAPIVersion)
				if fault == "name" {
					u.SetName("renamed")
				} else {
					u.SetLabels(map[string]string{"converted-by": "webhook"})
				}
				out, _ := u.MarshalJSON()
				resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: out})
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&apiextensionsv1.ConversionReview{TypeMeta: review.TypeMeta, Response: resp})
	}))
	// Its own CA, which the CRD's caBundle carries.
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	// certPEM is the serving certificate, then its CA.
	_, rest := pem.Decode(certPEM)
	s.caBundle = rest
	s.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func (s *conversionServer) setFault(f string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
}

// calls returns how many reviews the webhook got, and the last one.
func (s *conversionServer) calls() (int, apiextensionsv1.ConversionRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return 0, apiextensionsv1.ConversionRequest{}
	}
	return len(s.requests), s.requests[len(s.requests)-1]
}

// desired returns the desired versions of the reviews after the first n.
func (s *conversionServer) desired(n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.requests[n:] {
		out = append(out, r.DesiredAPIVersion)
	}
	return out
}

func gadgetCRD(url string, caBundle []byte) *apiextensionsv1.CustomResourceDefinition {
	version := func(name string, storage bool, spec map[string]apiextensionsv1.JSONSchemaProps) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: true, Storage: storage,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: spec}}}}}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.operator.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "operator.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				version("v1", true, map[string]apiextensionsv1.JSONSchemaProps{"hostPort": {Type: "string"}}),
				version("v2", false, map[string]apiextensionsv1.JSONSchemaProps{"host": {Type: "string"}, "port": {Type: "string"}}),
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
				ConversionReviewVersions: []string{"v1", "v1beta1"},
				ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: ptr.To(url), CABundle: caBundle},
			}},
		},
	}
}

func gadget(version, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "operator.example.com/" + version, "kind": "Gadget",
		"metadata": map[string]any{"name": name, "namespace": "default"}, "spec": spec}}
}

func specOf(u *unstructured.Unstructured) map[string]any {
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	return spec
}

// TestCRDConversionWebhook serves a CRD whose v1 (storage) and v2 differ
// in shape through a controller-runtime conversion webhook over TLS:
// objects written in either version read in both, on get, list, watch
// and after updates; a list converts in one review; a webhook that fails
// or answers wrongly fails the request with upstream's 500 and message,
// while the storage version, which needs no conversion, still reads.
func TestCRDConversionWebhook(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	srv, err := kite.Start(ctx, kite.Options{EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hook := newConversionServer(t)
	caBundle := hook.caBundle

	crds, err := apiextensionsclient.NewForConfig(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Run("validation", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			change func(*apiextensionsv1.WebhookConversion)
			want   string
		}{
			{"unknown review version", func(w *apiextensionsv1.WebhookConversion) { w.ConversionReviewVersions = []string{"v2"} },
				`spec.conversion.conversionReviewVersions: Invalid value: ["v2"]: must include at least one of v1, v1beta1`},
			{"no review versions", func(w *apiextensionsv1.WebhookConversion) { w.ConversionReviewVersions = nil },
				"spec.conversion.conversionReviewVersions: Required value"},
			{"http URL", func(w *apiextensionsv1.WebhookConversion) { w.ClientConfig.URL = ptr.To("http://127.0.0.1/convert") },
				`spec.conversion.webhookClientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme`},
			{"URL and service", func(w *apiextensionsv1.WebhookConversion) {
				w.ClientConfig.Service = &apiextensionsv1.ServiceReference{Namespace: "default", Name: "hook"}
			}, "spec.conversion.webhookClientConfig: Required value: exactly one of url or service is required"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				crd := gadgetCRD(hook.URL+"/convert", caBundle)
				tc.change(crd.Spec.Conversion.Webhook)
				_, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("create: %v, want 422 with %q", err, tc.want)
				}
			})
		}
	})
	if _, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, gadgetCRD(hook.URL+"/convert", caBundle), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the CRD: %v", err)
	}
	dyn, err := dynamic.NewForConfig(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	v1, v2 := dyn.Resource(gadgetsV1).Namespace("default"), dyn.Resource(gadgetsV2).Namespace("default")
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err1 := v1.List(ctx, metav1.ListOptions{})
		_, err2 := v2.List(ctx, metav1.ListOptions{})
		return err1 == nil && err2 == nil, nil
	}); err != nil {
		t.Fatal("gadgets were never served")
	}

	if _, err := v1.Create(ctx, gadget("v1", "one", map[string]any{"hostPort": "localhost:8080"}), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create in v1: %v", err)
	}
	before, _ := hook.calls()
	if _, err := v2.Create(ctx, gadget("v2", "two", map[string]any{"host": "example.com", "port": "443"}), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create in v2: %v", err)
	}
	// Into the storage version, and the stored object back for the answer.
	if got := hook.desired(before); fmt.Sprint(got) != "[operator.example.com/v1 operator.example.com/v2]" {
		t.Errorf("a create in v2 asked for %v, want the storage version, then v2", got)
	}
	want := map[string]map[string]map[string]any{
		"v1": {"one": {"hostPort": "localhost:8080"}, "two": {"hostPort": "example.com:443"}},
		"v2": {"one": {"host": "localhost", "port": "8080"}, "two": {"host": "example.com", "port": "443"}},
	}
	check := func(version string, u *unstructured.Unstructured) {
		t.Helper()
		if u.GetAPIVersion() != "operator.example.com/"+version {
			t.Errorf("%s read as %s, want %s", u.GetName(), u.GetAPIVersion(), version)
		}
		if w, ok := want[version][u.GetName()]; ok && fmt.Sprint(specOf(u)) != fmt.Sprint(w) {
			t.Errorf("%s in %s: spec %v, want %v", u.GetName(), version, specOf(u), w)
		}
	}
	for version, client := range map[string]dynamic.ResourceInterface{"v1": v1, "v2": v2} {
		for _, name := range []string{"one", "two"} {
			got, err := client.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get %s in %s: %v", name, version, err)
			}
			check(version, got)
		}
		before, _ := hook.calls()
		list, err := client.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list in %s: %v", version, err)
		}
		if len(list.Items) != 2 {
			t.Fatalf("list in %s: %d items, want 2", version, len(list.Items))
		}
		for i := range list.Items {
			check(version, &list.Items[i])
		}
		if after, req := hook.calls(); version == "v2" && (after != before+1 || len(req.Objects) != 2) {
			t.Errorf("a list in v2 made %d reviews (the last of %d objects), want one of 2", after-before, len(req.Objects))
		}
	}

	t.Run("watch", func(t *testing.T) {
		watches := map[string]watch.Interface{}
		for version, client := range map[string]dynamic.ResourceInterface{"v1": v1, "v2": v2} {
			list, err := client.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			w, err := client.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
			if err != nil {
				t.Fatalf("watch in %s: %v", version, err)
			}
			defer w.Stop()
			watches[version] = w
		}
		if _, err := v1.Create(ctx, gadget("v1", "three", map[string]any{"hostPort": "10.0.0.1:53"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := v2.Patch(ctx, "one", types.MergePatchType, []byte(`{"spec":{"port":"9090"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatalf("patch in v2: %v", err)
		}
		want["v1"]["three"], want["v2"]["three"] = map[string]any{"hostPort": "10.0.0.1:53"}, map[string]any{"host": "10.0.0.1", "port": "53"}
		want["v1"]["one"], want["v2"]["one"] = map[string]any{"hostPort": "localhost:9090"}, map[string]any{"host": "localhost", "port": "9090"}
		for version, w := range watches {
			for _, wantEvent := range []string{"ADDED three", "MODIFIED one"} {
				select {
				case ev := <-w.ResultChan():
					u, ok := ev.Object.(*unstructured.Unstructured)
					if !ok || string(ev.Type)+" "+u.GetName() != wantEvent {
						t.Fatalf("watch in %s: %s %v, want %s", version, ev.Type, ev.Object, wantEvent)
					}
					check(version, u)
				case <-ctx.Done():
					t.Fatalf("watch in %s: no %s", version, wantEvent)
				}
			}
		}
	})

	t.Run("webhook changes labels", func(t *testing.T) {
		hook.setFault("label")
		defer hook.setFault("")
		got, err := v2.Get(ctx, "two", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.GetLabels()["converted-by"] != "webhook" {
			t.Errorf("labels %v, want the webhook's", got.GetLabels())
		}
	})

	for _, tc := range []struct {
		fault, want string
	}{
		{"failure", "conversion webhook for operator.example.com/v1, Kind=Gadget failed: gadget conversion is off"},
		{"http", "conversion webhook for operator.example.com/v1, Kind=Gadget failed: the server is currently unable to handle the request"},
		{"uid", `conversion webhook for operator.example.com/v1, Kind=Gadget failed: expected response.uid=`},
		{"count", "conversion webhook for operator.example.com/v1, Kind=Gadget returned 0 objects, expected 1"},
		{"name", "conversion webhook for operator.example.com/v1, Kind=Gadget returned invalid object: must have the same name: two != renamed"},
	} {
		t.Run("fault "+tc.fault, func(t *testing.T) {
			hook.setFault(tc.fault)
			defer hook.setFault("")
			_, err := v2.Get(ctx, "two", metav1.GetOptions{})
			if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("get in v2: %v, want 500 with %q", err, tc.want)
			}
			_, err = v2.List(ctx, metav1.ListOptions{})
			if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "conversion webhook for operator.example.com/v2, Kind=GadgetList") {
				t.Errorf("list in v2: %v, want a 500 naming the list", err)
			}
			_, err = v2.Create(ctx, gadget("v2", "refused-"+tc.fault, map[string]any{"host": "h", "port": "1"}), metav1.CreateOptions{})
			if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "conversion webhook for operator.example.com/v2, Kind=Gadget") {
				t.Errorf("create in v2: %v, want a 500", err)
			}
			if _, err := v1.Get(ctx, "two", metav1.GetOptions{}); err != nil {
				t.Errorf("get in the storage version, which converts nothing: %v", err)
			}
		})
	}

	t.Run("watch with a failing webhook", func(t *testing.T) {
		list, err := v2.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := v2.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		hook.setFault("failure")
		defer hook.setFault("")
		if _, err := v1.Create(ctx, gadget("v1", "unconvertible", map[string]any{"hostPort": "a:1"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-w.ResultChan():
			status, ok := ev.Object.(*metav1.Status)
			if ev.Type != watch.Error || !ok || status.Code != http.StatusInternalServerError || !strings.Contains(status.Message, "gadget conversion is off") {
				t.Errorf("watch in v2 got %s %v, want a 500 error event with the webhook's message", ev.Type, ev.Object)
			}
		case <-ctx.Done():
			t.Fatal("watch in v2: no event")
		}
	})

	t.Run("v1beta1 reviews after a CRD change", func(t *testing.T) {
		crd, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "gadgets.operator.example.com", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		crd.Spec.Conversion.Webhook.ConversionReviewVersions = []string{"v1beta1"}
		if _, err := crds.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update the CRD: %v", err)
		}
		// Served anew once the new generation is installed: reviews
		// turn v1beta1.
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err := v2.Get(ctx, "two", metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			check("v2", got)
			hook.mu.Lock()
			defer hook.mu.Unlock()
			return hook.reviews[len(hook.reviews)-1] == "apiextensions.k8s.io/v1beta1", nil
		}); err != nil {
			t.Fatalf("no v1beta1 review: %v", err)
		}
	})

	t.Run("storage version changes", func(t *testing.T) {
		crd, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "gadgets.operator.example.com", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		crd.Spec.Versions[0].Storage, crd.Spec.Versions[1].Storage = false, true
		crd, err = crds.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, crd, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("make v2 the storage version: %v", err)
		}
		if err := srv.CustomResources().Ensure(ctx, []*apiextensionsv1.CustomResourceDefinition{crd}); err != nil {
			t.Fatal(err)
		}
		before, _ := hook.calls()
		if _, err := v2.Create(ctx, gadget("v2", "four", map[string]any{"host": "four", "port": "4"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if after, _ := hook.calls(); after != before {
			t.Errorf("a create in the storage version v2 made %d reviews, want none", after-before)
		}
		want["v1"]["four"], want["v2"]["four"] = map[string]any{"hostPort": "four:4"}, map[string]any{"host": "four", "port": "4"}
		// Objects stored in v1 and in v2 side by side: a list sends each
		// version only what is not in it already.
		for version, client := range map[string]dynamic.ResourceInterface{"v1": v1, "v2": v2} {
			before, _ := hook.calls()
			list, err := client.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatalf("list in %s: %v", version, err)
			}
			if len(list.Items) != 5 {
				t.Fatalf("list in %s: %d items, want 5", version, len(list.Items))
			}
			for i := range list.Items {
				check(version, &list.Items[i])
			}
			after, req := hook.calls()
			if wantSent := map[string]int{"v1": 1, "v2": 4}[version]; after != before+1 || len(req.Objects) != wantSent {
				t.Errorf("a list in %s made %d reviews (the last of %d objects), want one of %d", version, after-before, len(req.Objects), wantSent)
			}
		}
	})
}

// BenchmarkListThroughConversionWebhook lists 100 gadgets stored as v1
// in v1 (no conversion) and in v2 (one ConversionReview of 100 objects
// to the webhook over a kept-alive TLS connection).
func BenchmarkListThroughConversionWebhook(b *testing.B) {
	ctx, cancel := context.WithTimeout(b.Context(), 5*time.Minute)
	defer cancel()
	hook := newConversionServer(b)
	srv, err := kite.Start(ctx, kite.Options{EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal",
		CRDs: []*apiextensionsv1.CustomResourceDefinition{gadgetCRD(hook.URL+"/convert", hook.caBundle)}})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	dyn, err := dynamic.NewForConfig(srv.RESTConfig())
	if err != nil {
		b.Fatal(err)
	}
	for i := range 100 {
		if _, err := dyn.Resource(gadgetsV1).Namespace("default").Create(ctx, gadget("v1", fmt.Sprintf("g%d", i), map[string]any{"hostPort": "h:1"}), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	for _, gvr := range []schema.GroupVersionResource{gadgetsV1, gadgetsV2} {
		b.Run(gvr.Version, func(b *testing.B) {
			client := dyn.Resource(gvr).Namespace("default")
			for b.Loop() {
				list, err := client.List(ctx, metav1.ListOptions{})
				if err != nil || len(list.Items) != 100 {
					b.Fatalf("list: %d items, %v", len(list.Items), err)
				}
			}
		})
	}
}
