package webhook

import (
	"sort"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/labels"
)

// listOptionsWithLabels lists from the watch cache with a label selector.
type listOptionsWithLabels struct{ selector labels.Selector }

func (l listOptionsWithLabels) ListOptions() *metainternalversion.ListOptions {
	return &metainternalversion.ListOptions{ResourceVersion: "0", LabelSelector: l.selector}
}

func listFromCache() *metainternalversion.ListOptions {
	return &metainternalversion.ListOptions{ResourceVersion: "0"}
}

func sortByName[T any](items []T, name func(T) string) {
	sort.SliceStable(items, func(i, j int) bool { return name(items[i]) < name(items[j]) })
}
