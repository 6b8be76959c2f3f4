package builtin_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/kite-project/kite/registry/builtin"
)

// TestEnabledAdmissionPluginsAsUpstreamsFlags: the defaults, what the
// flags add and take away, in upstream's order whatever the flags' order,
// and upstream's refusals.
func TestEnabledAdmissionPluginsAsUpstreamsFlags(t *testing.T) {
	tests := []struct {
		name            string
		enable, disable []string
		has, hasNot     []string
		err             string
	}{
		// NodeRestriction is on by default, as kubeadm turns it on.
		{name: "defaults", has: []string{"NamespaceLifecycle", "DefaultTolerationSeconds", "ValidatingAdmissionWebhook", "NodeRestriction"}, hasNot: []string{"AlwaysDeny"}},
		{name: "enable adds", enable: []string{"AlwaysPullImages", "NodeRestriction"}, has: []string{"NodeRestriction", "AlwaysPullImages", "NamespaceLifecycle"}},
		{name: "disable takes a default away", disable: []string{"NodeRestriction"}, hasNot: []string{"NodeRestriction"}},
		{name: "disable removes", disable: []string{"DefaultTolerationSeconds"}, hasNot: []string{"DefaultTolerationSeconds"}, has: []string{"NamespaceLifecycle"}},
		{name: "unknown", enable: []string{"Nope"}, err: `admission plugin "Nope" is unknown`},
		{name: "both", enable: []string{"AlwaysDeny"}, disable: []string{"AlwaysDeny"}, err: "must not overlap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			on, err := builtin.EnabledAdmissionPlugins(tt.enable, tt.disable)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, want an error with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range tt.has {
				if !slices.Contains(on, n) {
					t.Errorf("%s is off in %v", n, on)
				}
			}
			for _, n := range tt.hasNot {
				if slices.Contains(on, n) {
					t.Errorf("%s is on in %v", n, on)
				}
			}
			// Upstream's order, whatever the flags'.
			last := -1
			for _, n := range on {
				i := slices.Index(builtin.AdmissionPluginOrder, n)
				if i < last {
					t.Errorf("%s out of upstream's order in %v", n, on)
				}
				last = i
			}
		})
	}
}
