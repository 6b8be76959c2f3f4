package watchcache

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestSizesFollowTheFlags(t *testing.T) {
	per, err := ParseSizes([]string{"pods#5000", "deployments.apps#0", "events#0"})
	if err != nil {
		t.Fatal(err)
	}
	s := Sizes{Default: -1, PerResource: per}
	tests := []struct {
		gr      schema.GroupResource
		want    int
		enabled bool
	}{
		{schema.GroupResource{Resource: "pods"}, 5000, true},
		{schema.GroupResource{Group: "apps", Resource: "deployments"}, 0, false},
		{schema.GroupResource{Resource: "events"}, 0, false},
		{schema.GroupResource{Resource: "nodes"}, DefaultMaxEvents, true},
	}
	for _, tt := range tests {
		got, enabled := s.For(tt.gr)
		if got != tt.want || enabled != tt.enabled {
			t.Errorf("For(%v) = %d, %v; want %d, %v", tt.gr, got, enabled, tt.want, tt.enabled)
		}
	}
	if _, enabled := (Sizes{Default: 0}).For(schema.GroupResource{Resource: "nodes"}); enabled {
		t.Error("--default-watch-cache-size=0 must disable unlisted resources")
	}
}

func TestParseSizesRefusesMalformedEntries(t *testing.T) {
	for _, bad := range []string{"pods", "#10", "pods#-1", "pods#x"} {
		if _, err := ParseSizes([]string{bad}); err == nil {
			t.Errorf("ParseSizes(%q) accepted it", bad)
		}
	}
}
