package watchcache

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Sizes are kube-apiserver's --watch-cache-sizes and
// --default-watch-cache-size, read the Kite way: a size of 0 disables the
// cache of a resource (its reads and watches go to etcd), as upstream; a
// positive size bounds the resource's event window (Options.MaxEvents),
// where upstream ignores it. The window still keeps DefaultHistoryWindow
// of history whenever the bound allows.
type Sizes struct {
	// Default applies to resources not in PerResource: 0 disables their
	// caches, a negative value means DefaultMaxEvents.
	Default int
	// PerResource are the --watch-cache-sizes entries.
	PerResource map[schema.GroupResource]int
}

// ParseSizes reads --watch-cache-sizes entries, "resource[.group]#size"
// (e.g. "pods#1000", "deployments.apps#0"), as upstream.
func ParseSizes(entries []string) (map[schema.GroupResource]int, error) {
	out := make(map[schema.GroupResource]int, len(entries))
	for _, entry := range entries {
		resource, size, ok := strings.Cut(entry, "#")
		if !ok || resource == "" {
			return nil, fmt.Errorf("invalid watch cache size %q: want resource[.group]#size", entry)
		}
		n, err := strconv.Atoi(size)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("invalid watch cache size %q: size must be a non-negative integer", entry)
		}
		out[schema.ParseGroupResource(resource)] = n
	}
	return out, nil
}

// For returns whether gr is cached and, if so, the bound of its event
// window (the value for Options.MaxEvents).
func (s Sizes) For(gr schema.GroupResource) (maxEvents int, enabled bool) {
	size, ok := s.PerResource[gr]
	if !ok {
		size = s.Default
	}
	switch {
	case size == 0:
		return 0, false
	case size < 0:
		return DefaultMaxEvents, true
	default:
		return size, true
	}
}
