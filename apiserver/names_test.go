package apiserver_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestBodyNamingAnotherObjectIsABadRequest checks that a write whose body
// names another object than its URL gets upstream's 400 before anything
// is looked up: for a name that exists and one that does not, for the
// object and its subresources.
func TestBodyNamingAnotherObjectIsABadRequest(t *testing.T) {
	ns := newNamespace(t, shared)
	client := kubernetes.NewForConfigOrDie(shared.RESTConfig())
	if _, err := client.CoreV1().Pods(ns).Create(t.Context(), &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "i"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := "/api/v1/namespaces/" + ns + "/pods/"
	pod := func(meta string) []byte {
		return []byte(`{"apiVersion":"v1","kind":"Pod","metadata":` + meta + `,"spec":{"containers":[{"name":"c","image":"i"}]}}`)
	}
	const wrongNamespace = "the namespace of the provided object does not match the namespace sent on the request"
	tests := []struct {
		name    string
		method  string
		path    string
		body    []byte
		message string
	}{
		{"another name, none by the URL's", "PUT", pods + "missing", pod(`{"name":"p"}`),
			"the name of the object (p) does not match the name on the URL (missing)"},
		{"another name, both exist", "PUT", pods + "p", pod(`{"name":"q"}`),
			"the name of the object (q) does not match the name on the URL (p)"},
		{"no name", "PUT", pods + "missing", pod(`{}`),
			"the name of the object (missing based on URL) was undeterminable: name must be provided"},
		{"another namespace", "PUT", pods + "missing", pod(`{"name":"missing","namespace":"elsewhere"}`), wrongNamespace},
		{"another namespace before another name", "PUT", pods + "p", pod(`{"name":"q","namespace":"elsewhere"}`), wrongNamespace},
		{"status of another name", "PUT", pods + "missing/status", pod(`{"name":"p"}`),
			"the name of the object (p) does not match the name on the URL (missing)"},
		{"status in another namespace", "PUT", pods + "p/status", pod(`{"name":"p","namespace":"elsewhere"}`), wrongNamespace},
		{"apply of another name", "PATCH", pods + "missing?fieldManager=t", []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n"),
			"the name of the object (p) does not match the name on the URL (missing)"},
		{"apply in another namespace before another name", "PATCH", pods + "p?fieldManager=t", []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: q\n  namespace: elsewhere\n"), wrongNamespace},
		{"binding in another namespace", "POST", pods + "missing/binding",
			[]byte(`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"missing","namespace":"elsewhere"},"target":{"kind":"Node","name":"n"}}`), wrongNamespace},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			contentType := "application/json"
			if tc.method == "PATCH" {
				contentType = "application/apply-patch+yaml"
			}
			code, body, st := send(t, shared, tc.method, tc.path, contentType, tc.body)
			if code != 400 || st.Reason != metav1.StatusReasonBadRequest || st.Message != tc.message {
				t.Fatalf("%s %s: %d %s, want 400 BadRequest %q", tc.method, tc.path, code, body, tc.message)
			}
		})
	}
	got, err := client.CoreV1().Pods(ns).Get(t.Context(), "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Generation != 1 || got.Spec.NodeName != "" {
		t.Errorf("refused writes changed the pod: generation %d, node %q", got.Generation, got.Spec.NodeName)
	}
}
