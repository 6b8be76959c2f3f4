package registry

import (
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

	// mu guards managers, custom and typed.
	mu       sync.Mutex
	managers map[fieldManagerKey]*managedfields.FieldManager
	// custom are the schemas of kinds served from CRDs, by kind.
	custom map[schema.GroupVersionKind]managedfields.TypeConverter
	// typed are the schemas of Go kinds that client-go's compiled-in
	// schema lacks (autoscaling/v1 Scale), by kind.
	typed map[schema.GroupVersionKind]managedfields.TypeConverter
}

// SetTyped makes kinds, Go types of the scheme that client-go's
// compiled-in schema lacks (the Scale of scale subresources, which is no
// resource of its own; CustomResourceDefinitions, see
// Strategy.ApplySchema), known by the schema converter describes.
func (f *FieldManagers) SetTyped(converter managedfields.TypeConverter, kinds ...schema.GroupVersionKind) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.typed == nil {
		f.typed = map[schema.GroupVersionKind]managedfields.TypeConverter{}
	}
	for _, kind := range kinds {
		f.typed[kind] = converter
		for k := range f.managers {
			if k.kind == kind {
				delete(f.managers, k)
			}
		}
	}
}

// SetCustom makes kind, a custom resource kind, known by the schema
// converter describes (nil forgets it); managers handed out for it before
// are replaced on the next For.
func (f *FieldManagers) SetCustom(kind schema.GroupVersionKind, converter managedfields.TypeConverter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.custom == nil {
		f.custom = map[schema.GroupVersionKind]managedfields.TypeConverter{}
	}
	if converter == nil {
		delete(f.custom, kind)
	} else {
		f.custom[kind] = converter
	}
	for k := range f.managers {
		if k.kind == kind {
			delete(f.managers, k)
		}
	}
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
// when the schema does not know the kind. What its writers come to own
// passes reset first (upstream's reset fields: nil keeps everything; e.g.
// the main resource's writers never own status), so fields a writer of
// this (sub)resource cannot change are never theirs.
func (f *FieldManagers) For(kind schema.GroupVersionKind, subresource string, reset fieldpath.Filter) *managedfields.FieldManager {
	k := fieldManagerKey{kind, subresource}
	f.mu.Lock()
	defer f.mu.Unlock()
	if m, ok := f.managers[k]; ok {
		return m
	}
	var resetFields map[fieldpath.APIVersion]fieldpath.Filter
	if reset != nil {
		resetFields = map[fieldpath.APIVersion]fieldpath.Filter{
			fieldpath.APIVersion(kind.GroupVersion().String()): reset,
		}
	}
	var m *managedfields.FieldManager
	var err error
	if tc, ok := f.custom[kind]; ok {
		m, err = managedfields.NewDefaultCRDFieldManager(tc, unstructuredConvertor{}, noDefaults{}, unstructuredCreater{}, kind, kind.GroupVersion(), subresource, resetFields)
	} else if tc, ok := f.typed[kind]; ok {
		m, err = managedfields.NewDefaultFieldManager(tc, f.scheme, f.scheme, f.scheme, kind, kind.GroupVersion(), subresource, resetFields)
	} else {
		m, err = managedfields.NewDefaultFieldManager(f.converter, f.scheme, f.scheme, f.scheme, kind, kind.GroupVersion(), subresource, resetFields)
		if err == nil && !f.knows(kind) {
			err = errUnknownKind
		}
	}
	if err != nil {
		// Unknown kinds keep working without managed fields.
		m = nil
	}
	f.managers[k] = m
	return m
}

// ExcludeFields is the reset filter that keeps every field but the
// top-level ones named (a status subresource's "spec", a main resource's
// "status").
func ExcludeFields(names ...string) fieldpath.Filter {
	set := fieldpath.NewSet()
	for _, name := range names {
		set.Insert(fieldpath.MakePathOrDie(name))
	}
	return fieldpath.NewExcludeSetFilter(set)
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

// unstructuredConvertor converts custom resources between versions as
// conversion None does: only apiVersion changes.
type unstructuredConvertor struct{}

func (unstructuredConvertor) Convert(in, out, _ any) error {
	src, ok1 := in.(*unstructured.Unstructured)
	dst, ok2 := out.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return fmt.Errorf("registry: cannot convert %T to %T", in, out)
	}
	dst.Object = runtime.DeepCopyJSON(src.Object)
	return nil
}

func (unstructuredConvertor) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("registry: cannot convert %T", in)
	}
	target, ok := gv.KindForGroupVersionKinds([]schema.GroupVersionKind{u.GroupVersionKind()})
	if !ok {
		return nil, fmt.Errorf("registry: no version of %s for %v", u.GroupVersionKind(), gv)
	}
	out := u.DeepCopy()
	out.SetGroupVersionKind(target)
	return out, nil
}

func (unstructuredConvertor) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

type noDefaults struct{}

func (noDefaults) Default(runtime.Object) {}

type unstructuredCreater struct{}

func (unstructuredCreater) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kind)
	return u, nil
}
