package registry

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
)

// TypeConverter returns the structured-merge schema of kind (a custom
// resource's, a Go kind's the compiled-in schema lacks, or the built-in
// one), or nil when none knows it. Mutating admission policies merge
// their ApplyConfigurations with it.
func (f *FieldManagers) TypeConverter(kind schema.GroupVersionKind) managedfields.TypeConverter {
	f.mu.Lock()
	defer f.mu.Unlock()
	if tc, ok := f.custom[kind]; ok {
		return tc
	}
	if tc, ok := f.typed[kind]; ok {
		return tc
	}
	if f.knows(kind) {
		return f.converter
	}
	return nil
}
