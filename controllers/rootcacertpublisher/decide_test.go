package rootcacertpublisher

import (
	"maps"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDecide(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n")
	active := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}, Status: v1.NamespaceStatus{Phase: v1.NamespaceActive}}
	gone := metav1.NewTime(time.Unix(1e9, 0))
	deleting := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", DeletionTimestamp: &gone}, Status: v1.NamespaceStatus{Phase: v1.NamespaceTerminating}}
	terminating := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}, Status: v1.NamespaceStatus{Phase: v1.NamespaceTerminating}}
	cm := func(data map[string]string, annotations map[string]string) *v1.ConfigMap {
		return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: "ns", ResourceVersion: "7", Annotations: annotations, Labels: map[string]string{"mine": "yes"}}, Data: data}
	}
	described := map[string]string{DescriptionAnnotation: Description}
	right := map[string]string{Key: string(ca)}
	tests := []struct {
		name string
		ns   *v1.Namespace
		cm   *v1.ConfigMap
		want Action
	}{
		{"a new namespace gets it", active, nil, Create},
		{"a namespace without a phase yet gets it", &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}, nil, Create},
		{"as it should be: nothing", active, cm(right, described), Nothing},
		{"another description is kept, as upstream", active, cm(right, map[string]string{DescriptionAnnotation: "mine"}), Nothing},
		{"data emptied: put back", active, cm(map[string]string{Key: ""}, described), Update},
		{"another CA: put back", active, cm(map[string]string{Key: "other"}, described), Update},
		{"a key added: removed", active, cm(map[string]string{Key: string(ca), "extra": "x"}, described), Update},
		{"no data: put back", active, cm(nil, described), Update},
		{"no description: added", active, cm(right, nil), Update},
		{"a namespace being deleted: nothing", deleting, nil, Nothing},
		{"a Terminating namespace: nothing", terminating, cm(nil, nil), Nothing},
		{"a namespace gone: nothing", nil, nil, Nothing},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before *v1.ConfigMap
			if tc.cm != nil {
				before = tc.cm.DeepCopy()
			}
			got, out := Decide(tc.ns, tc.cm, ca)
			if got != tc.want {
				t.Fatalf("= %v, want %v", got, tc.want)
			}
			if tc.cm != nil && !maps.Equal(tc.cm.Data, before.Data) || tc.cm != nil && !maps.Equal(tc.cm.Annotations, before.Annotations) {
				t.Fatalf("Decide changed the cached ConfigMap: %+v", tc.cm)
			}
			if got == Nothing {
				if out != nil {
					t.Fatalf("Nothing with a ConfigMap %+v", out)
				}
				return
			}
			if out.Name != ConfigMapName || out.Namespace != "ns" || !maps.Equal(out.Data, right) || out.Annotations[DescriptionAnnotation] == "" {
				t.Fatalf("writes %+v, want %s/%s with the bundle and a description", out, "ns", ConfigMapName)
			}
			if got == Create && out.Annotations[DescriptionAnnotation] != Description {
				t.Fatalf("created with description %q, want upstream's", out.Annotations[DescriptionAnnotation])
			}
			if got == Update && (out.ResourceVersion != "7" || out.Labels["mine"] != "yes") {
				t.Fatalf("update %+v does not keep the resourceVersion and the user's labels", out)
			}
		})
	}
}
