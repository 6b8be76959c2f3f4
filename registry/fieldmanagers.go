package registry

import (
	"errors"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// FieldManagers hands out one managedfields.FieldManager per kind and
// subresource, built on the structured-merge schema client-go compiles in
// for the built-in types. Building the schema is the expensive part, so one
// FieldManagers is shared by every Store of a server.
type FieldManagers struct {
	scheme    *runtime.Scheme
	converter managedfields.TypeConverter

	// mu guards managers.
	mu       sync.Mutex
	managers map[fieldManagerKey]*managedfields.FieldManager
}

type fieldManagerKey struct {
	kind        schema.GroupVersionKind
	subresource string
}

// NewFieldManagers returns field managers for the kinds of scheme.
func NewFieldManagers(scheme *runtime.Scheme) *FieldManagers {
	return &FieldManagers{
		scheme:    scheme,
		converter: applyconfigurations.NewTypeConverter(scheme),
		managers:  map[fieldManagerKey]*managedfields.FieldManager{},
	}
}

// For returns the field manager of kind's subresource ("" = main), or nil
// when the schema does not know the kind. Fields under reset (the
// top-level fields a writer of this (sub)resource cannot change, e.g.
// status for the main resource) are never owned by its writers.
func (f *FieldManagers) For(kind schema.GroupVersionKind, subresource string, reset ...string) *managedfields.FieldManager {
	k := fieldManagerKey{kind, subresource}
	f.mu.Lock()
	defer f.mu.Unlock()
	if m, ok := f.managers[k]; ok {
		return m
	}
	var resetFields map[fieldpath.APIVersion]fieldpath.Filter
	if len(reset) > 0 {
		set := fieldpath.NewSet()
		for _, name := range reset {
			set.Insert(fieldpath.MakePathOrDie(name))
		}
		resetFields = map[fieldpath.APIVersion]fieldpath.Filter{
			fieldpath.APIVersion(kind.GroupVersion().String()): fieldpath.NewExcludeSetFilter(set),
		}
	}
	m, err := managedfields.NewDefaultFieldManager(f.converter, f.scheme, f.scheme, f.scheme, kind, kind.GroupVersion(), subresource, resetFields)
	if err == nil && !f.knows(kind) {
		err = errUnknownKind
	}
	if err != nil {
		// Unknown kinds keep working without managed fields.
		m = nil
	}
	f.managers[k] = m
	return m
}

var errUnknownKind = errors.New("registry: the structured-merge schema does not know the kind")

// knows reports whether the schema can type objects of kind (client-go's
// compiled-in schema lacks e.g. apiextensions.k8s.io).
func (f *FieldManagers) knows(kind schema.GroupVersionKind) bool {
	obj, err := f.scheme.New(kind)
	if err != nil {
		return false
	}
	obj.GetObjectKind().SetGroupVersionKind(kind)
	_, err = f.converter.ObjectToTyped(obj)
	return err == nil
}
