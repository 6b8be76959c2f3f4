package runtimeclass

import (
	"testing"

	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLookup(t *testing.T) {
	classes := map[string]*nodev1.RuntimeClass{
		"runc":   {ObjectMeta: metav1.ObjectMeta{Name: "runc"}, Handler: "runc"},
		"gvisor": {ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"},
	}
	get := func(name string) (*nodev1.RuntimeClass, bool) { rc, ok := classes[name]; return rc, ok }
	str := func(s string) *string { return &s }
	for _, c := range []struct {
		name    *string
		handler string
		err     string
	}{
		{nil, "", ""},
		{str(""), "", ""},
		{str("runc"), "runc", ""},
		{str("gvisor"), "runsc", ""},
		// The kubelet's lister's error, word for word: the event says
		// "Failed to create pod sandbox: " and this.
		{str("gone"), "", `runtimeclass.node.k8s.io "gone" not found`},
	} {
		h, err := Lookup(c.name, get)
		got := ""
		if err != nil {
			got = err.Error()
			if !apierrors.IsNotFound(err) {
				t.Errorf("Lookup(%v): %v is not a NotFound", c.name, err)
			}
		}
		if h != c.handler || got != c.err {
			t.Errorf("Lookup(%v) = %q, %q; want %q, %q", c.name, h, got, c.handler, c.err)
		}
	}
}
