package defaults

import (
	"sort"

	storagev1 "k8s.io/api/storage/v1"
)

// The annotations that make a StorageClass the default one.
const (
	IsDefaultClassAnnotation     = "storageclass.kubernetes.io/is-default-class"
	BetaIsDefaultClassAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
)

// DefaultClass is the name of the default StorageClass among classes,
// "" when none is: the newest of those annotated is-default-class=true
// (by name when created in the same instant), upstream's GetDefaultClass,
// which the DefaultStorageClass admission and the binder's retroactive
// defaulting both use.
func DefaultClass[C *storagev1.StorageClass | storagev1.StorageClass](classes []C) string {
	var defaults []*storagev1.StorageClass
	for i := range classes {
		var c *storagev1.StorageClass
		switch v := any(&classes[i]).(type) {
		case **storagev1.StorageClass:
			c = *v
		case *storagev1.StorageClass:
			c = v
		}
		if c.Annotations[IsDefaultClassAnnotation] == "true" || c.Annotations[BetaIsDefaultClassAnnotation] == "true" {
			defaults = append(defaults, c)
		}
	}
	if len(defaults) == 0 {
		return ""
	}
	sort.Slice(defaults, func(i, j int) bool {
		ti, tj := defaults[i].CreationTimestamp.UnixNano(), defaults[j].CreationTimestamp.UnixNano()
		if ti == tj {
			return defaults[i].Name < defaults[j].Name
		}
		return ti > tj
	})
	return defaults[0].Name
}
