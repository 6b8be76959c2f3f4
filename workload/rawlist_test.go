package workload

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// encodeList is a list response body as an API server writes it.
func encodeList(t testing.TB, mediaType string, list *v1.PodList) []byte {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		t.Fatalf("no serializer for %s", mediaType)
	}
	body, err := runtime.Encode(scheme.Codecs.EncoderForVersion(info.Serializer, v1.SchemeGroupVersion), list)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// TestRawListReadsNamesAndContinue encodes pod lists with the real
// serializers (items whose other fields hold "name" and "metadata" look-
// alikes, escaped names, a continue token) and checks that the raw reader
// gets exactly the items' names, in order, the token and the list's
// resourceVersion.
func TestRawListReadsNamesAndContinue(t *testing.T) {
	pod := func(name string) v1.Pod {
		p := (Options{Namespace: "bench", Nodes: 3}).newPod(1)
		p.Name = name
		return *p
	}
	tricky := pod(`esc"aped\name☃`)
	tricky.GenerateName = "not-the-name"
	tricky.Labels["name"] = "label-value"
	tricky.Annotations = map[string]string{"x": `{"metadata":{"name":"evil"}}`}
	tricky.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "owner", UID: "u"}}
	for _, tt := range []struct {
		name  string
		list  v1.PodList
		names []string
		cont  string
		rv    string
	}{
		{"empty", v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "5"}}, nil, "", "5"},
		{"pods", v1.PodList{Items: []v1.Pod{pod("a"), tricky, pod("c")}}, []string{"a", `esc"aped\name☃`, "c"}, "", ""},
		{"a page", v1.PodList{ListMeta: metav1.ListMeta{Continue: "tok\"en", ResourceVersion: "9"}, Items: []v1.Pod{pod("a")}}, []string{"a"}, "tok\"en", "9"},
	} {
		for _, mediaType := range mediaTypes {
			t.Run(tt.name+"/"+mediaType, func(t *testing.T) {
				got, err := parseList(encodeList(t, mediaType, &tt.list))
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got.names, tt.names) || got.cont != tt.cont || got.rv != tt.rv {
					t.Fatalf("names %q continue %q resourceVersion %q, want %q, %q and %q", got.names, got.cont, got.rv, tt.names, tt.cont, tt.rv)
				}
			})
		}
	}
}

// TestRawListRefusesMalformedBodies cuts real list bodies short and feeds
// items without names: each is an error wrapping errMalformed, never a
// short count taken for a whole list.
func TestRawListRefusesMalformedBodies(t *testing.T) {
	list := &v1.PodList{Items: []v1.Pod{*(Options{Namespace: "bench", Nodes: 3}).newPod(1), *(Options{Namespace: "bench", Nodes: 3}).newPod(2)}}
	for _, mediaType := range mediaTypes {
		body := encodeList(t, mediaType, list)
		// Not the last 4 bytes: in protobuf they are the envelope's empty
		// content type and encoding, after the whole list.
		for _, cut := range []int{1, len(body) / 3, len(body) / 2, len(body) - 5} {
			t.Run(fmt.Sprintf("%s/cut at %d", mediaType, cut), func(t *testing.T) {
				got, err := parseList(body[:cut])
				if err == nil {
					t.Fatalf("a body cut at %d of %d read without error: %q", cut, len(body), got.names)
				}
				if !errors.Is(err, errMalformed) {
					t.Fatalf("error %v does not wrap errMalformed", err)
				}
			})
		}
		nameless := &v1.PodList{Items: []v1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "bench"}}}}
		if _, err := parseList(encodeList(t, mediaType, nameless)); !errors.Is(err, errMalformed) {
			t.Errorf("%s: an item without a name: %v, want errMalformed", mediaType, err)
		}
	}
}
