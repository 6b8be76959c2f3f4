package api_test

import (
	"bytes"
	"fmt"
	"io"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	protobufserializer "k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// TestPaginationUnderConcurrentWritesReturnsEachObjectOnce pages through
// pods with limit/continue while other pods are created and updated:
// every pod that existed before the first page appears exactly once, and
// all pages come from the first page's resourceVersion.
func TestPaginationUnderConcurrentWritesReturnsEachObjectOnce(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ctx := t.Context()
	ns := newNamespace(t, client)
	pods := client.CoreV1().Pods(ns)
	const n = 60
	before := map[string]bool{}
	for i := range n {
		p, err := pods.Create(ctx, testPod(fmt.Sprintf("p-%03d", i)), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		before[p.Name] = true
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	startWriter := func() {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				pods.Create(ctx, testPod(fmt.Sprintf("new-%04d", i)), metav1.CreateOptions{})
				if p, err := pods.Get(ctx, fmt.Sprintf("p-%03d", i%n), metav1.GetOptions{}); err == nil {
					p.Labels["round"] = fmt.Sprint(i)
					pods.Update(ctx, p, metav1.UpdateOptions{})
				}
			}
		})
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()

	seen := map[string]int{}
	opts := metav1.ListOptions{Limit: 7}
	var firstRV string
	pages := 0
	for {
		page, err := pods.List(ctx, opts)
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		pages++
		if firstRV == "" {
			firstRV = page.ResourceVersion
			if page.RemainingItemCount == nil || *page.RemainingItemCount != n-7 {
				t.Errorf("first page remainingItemCount %v, want %d", page.RemainingItemCount, n-7)
			}
		} else if page.ResourceVersion != firstRV {
			t.Errorf("page %d at resourceVersion %s, first at %s", pages, page.ResourceVersion, firstRV)
		}
		for _, p := range page.Items {
			seen[p.Name]++
		}
		if pages == 1 {
			// Write while the later pages are read.
			startWriter()
		}
		if page.Continue == "" {
			break
		}
		opts.Continue = page.Continue
	}
	if len(seen) != n {
		t.Errorf("pages returned %d distinct pods, want %d (the ones before the first page)", len(seen), n)
	}
	for name, count := range seen {
		if !before[name] || count != 1 {
			t.Errorf("pod %s seen %d times (existed before: %v)", name, count, before[name])
		}
	}
	if pages != (n+6)/7 {
		t.Errorf("%d pages, want %d", pages, (n+6)/7)
	}
}

func TestPodFieldSelectors(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ctx := t.Context()
	ns := newNamespace(t, client)
	pods := client.CoreV1().Pods(ns)
	a := testPod("a")
	a.Spec.NodeName = "node-a"
	a.Spec.RestartPolicy = v1.RestartPolicyNever
	a.Spec.HostNetwork = true
	b := testPod("b")
	b.Spec.SchedulerName = "other"
	for _, p := range []*v1.Pod{a, b} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		selector string
		want     string
	}{
		{"metadata.name=a", "a"},
		{"metadata.namespace=" + ns + ",metadata.name=b", "b"},
		{"spec.nodeName=node-a", "a"},
		{"spec.nodeName=", "b"},
		{"spec.restartPolicy=Never", "a"},
		{"spec.schedulerName=other", "b"},
		{"spec.serviceAccountName=default,metadata.name=b", "b"},
		{"spec.hostNetwork=true", "a"},
		{"status.phase=Pending,metadata.name!=a", "b"},
		{"status.podIP=", "a,b"},
		{"status.nominatedNodeName=x", ""},
	}
	for _, tt := range tests {
		t.Run(tt.selector, func(t *testing.T) {
			list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: tt.selector})
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			for i, p := range list.Items {
				if i > 0 {
					got += ","
				}
				got += p.Name
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// getBody GETs path from the shared server accepting mediaType and returns
// the (decompressed) body.
func getBody(t *testing.T, path, mediaType string) []byte {
	t.Helper()
	hc, err := rest.HTTPClientFor(config(t))
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, shared.URL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", mediaType)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v: %.200s", path, resp.StatusCode, err, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != mediaType {
		t.Fatalf("GET %s: Content-Type %q, want %q", path, ct, mediaType)
	}
	return body
}

// TestListBodiesAreUpstreamsEncoding lists pods over HTTP in JSON and
// protobuf (from the cache at RV 0, consistent, one page, a field
// selector) and checks that each body decodes to the pods created, that
// JSON items carry no kind or apiVersion (as kube-apiserver writes them),
// and that each body is byte for byte what apimachinery's streaming
// encoders make of the decoded list.
func TestListBodiesAreUpstreamsEncoding(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := newNamespace(t, client)
	for i := range 3 {
		p := testPod(fmt.Sprintf("p-%d", i))
		p.Annotations = map[string]string{"note": `<b>&</b> é ✓` + "\u2028"}
		p.Spec.NodeName = fmt.Sprintf("node-%d", i%2)
		if _, err := client.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	encoders := map[string]runtime.Encoder{
		"application/json": jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, scheme, scheme,
			jsonserializer.SerializerOptions{StreamingCollectionsEncoding: true}),
		"application/vnd.kubernetes.protobuf": protobufserializer.NewSerializerWithOptions(scheme, scheme,
			protobufserializer.SerializerOptions{StreamingCollectionsEncoding: true}),
	}
	decoder := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	base := "/api/v1/namespaces/" + ns + "/pods"
	queries := []struct {
		query string
		names []string
	}{
		{"?resourceVersion=0", []string{"p-0", "p-1", "p-2"}},
		{"", []string{"p-0", "p-1", "p-2"}},
		{"?limit=2", []string{"p-0", "p-1"}},
		{"?fieldSelector=spec.nodeName%3Dnode-1", []string{"p-1"}},
	}
	t.Run("application/yaml", func(t *testing.T) {
		body := getBody(t, base, "application/yaml")
		if !bytes.Contains(body, []byte("kind: PodList\n")) || bytes.Contains(body, []byte("kind: Pod\n")) {
			t.Errorf("YAML list: want kind PodList and items without a kind:\n%.400s", body)
		}
	})
	for mediaType, upstream := range encoders {
		for _, q := range queries {
			t.Run(mediaType+q.query, func(t *testing.T) {
				body := getBody(t, base+q.query, mediaType)
				obj, _, err := decoder.Decode(body, nil, nil)
				if err != nil {
					t.Fatalf("decode: %v: %.200q", err, body)
				}
				list, ok := obj.(*v1.PodList)
				if !ok {
					t.Fatalf("decoded %T, want *v1.PodList", obj)
				}
				var names []string
				for _, p := range list.Items {
					names = append(names, p.Name)
					if p.Kind != "" || p.APIVersion != "" {
						t.Errorf("item %s carries kind %q apiVersion %q; upstream's items carry none", p.Name, p.Kind, p.APIVersion)
					}
				}
				if fmt.Sprint(names) != fmt.Sprint(q.names) {
					t.Errorf("items %v, want %v", names, q.names)
				}
				if q.query == "?limit=2" && (list.Continue == "" || list.RemainingItemCount == nil || *list.RemainingItemCount != 1) {
					t.Errorf("page: continue %q remainingItemCount %v, want a token and 1", list.Continue, list.RemainingItemCount)
				}
				var want bytes.Buffer
				if err := upstream.Encode(list, &want); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(body, want.Bytes()) {
					t.Errorf("body differs from upstream's encoding of the same list:\n got %.300q\nwant %.300q", body, want.Bytes())
				}
			})
		}
	}
}

// TestServiceAndPodCertificateRequestFieldSelectors: the field selectors
// upstream's conversions accept for services (the kubelet lists services
// with spec.clusterIP!=None to build its environment variables) and for
// PodCertificateRequests (the kubelet watches its node's by
// spec.nodeName) select, instead of a 400 "field label not supported".
func TestServiceAndPodCertificateRequestFieldSelectors(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ctx := t.Context()
	ns := newNamespace(t, client)
	port := []v1.ServicePort{{Port: 80}}
	for _, svc := range []*v1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: v1.ServiceSpec{Ports: port}},
		{ObjectMeta: metav1.ObjectMeta{Name: "h"}, Spec: v1.ServiceSpec{Ports: port, ClusterIP: v1.ClusterIPNone}},
		{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: v1.ServiceSpec{Ports: port, Type: v1.ServiceTypeNodePort}},
	} {
		if _, err := client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct{ selector, want string }{
		{"spec.clusterIP!=None", "c,n"},
		{"spec.clusterIP=None", "h"},
		{"spec.type=NodePort", "n"},
		{"spec.type=ClusterIP,metadata.name!=c", "h"},
	} {
		t.Run(tt.selector, func(t *testing.T) {
			list, err := client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{FieldSelector: tt.selector})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range list.Items {
				names = append(names, s.Name)
			}
			if got := strings.Join(names, ","); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	for _, selector := range []string{"spec.nodeName=node-a", "spec.signerName=x", "spec.podName=p"} {
		if _, err := client.CertificatesV1().PodCertificateRequests(ns).List(ctx, metav1.ListOptions{FieldSelector: selector}); err != nil {
			t.Errorf("podcertificaterequests with %s: %v", selector, err)
		}
	}
	if _, err := client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.ports=80"}); !apierrors.IsBadRequest(err) {
		t.Errorf("services with an unknown field label: %v, want 400", err)
	}
}
