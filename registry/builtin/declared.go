package builtin

import (
	"reflect"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kite-project/kite/registry"
)

// declared describes a stored resource whose rules are only data and
// upstream's defaulting and validation (the kinds of issue 26): what is
// said here is all there is to it. T is the object's pointer type.
type declared[T runtime.Object] struct {
	kind       schema.GroupVersionKind
	resource   string
	short      []string
	categories []string
	namespaced bool
	newList    func() runtime.Object
	defaults   func(T)
	validate   func(T) field.ErrorList
	update     func(obj, old T) field.ErrorList
	// status, when set, serves the status subresource with it as its
	// validation (upstream's status strategy): the main resource keeps
	// the stored status, the subresource the rest.
	status func(obj, old T) field.ErrorList
	// generation moves with the spec, as upstream's PrepareForUpdate of
	// kinds with a spec.
	generation bool
	// fields are the selectable fields besides the metadata's.
	fields      func(T) fields.Set
	fieldLabels []string
	name        func(name string, prefix bool) []string
}

func (d declared[T]) strategy() *registry.Strategy {
	s := &registry.Strategy{
		Kind:                     d.kind,
		Resource:                 d.resource,
		SingularName:             strings.ToLower(d.kind.Kind),
		ShortNames:               d.short,
		Categories:               d.categories,
		Namespaced:               d.namespaced,
		New:                      func() runtime.Object { return reflect.New(reflect.TypeFor[T]().Elem()).Interface().(runtime.Object) },
		NewList:                  d.newList,
		ValidateName:             d.name,
		AllowUnconditionalUpdate: true,
	}
	if d.defaults != nil {
		s.Default = func(obj runtime.Object) { d.defaults(obj.(T)) }
	}
	if d.validate != nil {
		s.Validate = func(obj runtime.Object) field.ErrorList { return d.validate(obj.(T)) }
	}
	if d.update != nil {
		s.ValidateUpdate = func(obj, old runtime.Object) field.ErrorList { return d.update(obj.(T), old.(T)) }
	}
	if d.fields != nil {
		s.SelectableFields = func(obj runtime.Object) fields.Set { return d.fields(obj.(T)) }
		s.FieldLabels = d.fieldLabels
	}
	if d.generation || d.status != nil {
		s.PrepareForCreate = func(obj runtime.Object) {
			v := reflect.ValueOf(obj).Elem()
			if d.status != nil {
				f := v.FieldByName("Status")
				f.Set(reflect.Zero(f.Type()))
			}
			if d.generation {
				v.FieldByName("Generation").SetInt(1)
			}
		}
		s.PrepareForUpdate = func(obj, old runtime.Object) {
			v, o := reflect.ValueOf(obj).Elem(), reflect.ValueOf(old).Elem()
			if d.status != nil {
				v.FieldByName("Status").Set(o.FieldByName("Status"))
			}
			if d.generation && !apiequality.Semantic.DeepEqual(v.FieldByName("Spec").Interface(), o.FieldByName("Spec").Interface()) {
				v.FieldByName("Generation").SetInt(o.FieldByName("Generation").Int() + 1)
			}
		}
	}
	if d.status != nil {
		s.Subresources = map[string]*registry.Subresource{"status": {
			// Everything but the status and the metadata is the stored
			// object's, as upstream's status strategies keep the spec.
			PrepareForUpdate: func(obj, old runtime.Object) {
				v, o := reflect.ValueOf(obj).Elem(), reflect.ValueOf(old).Elem()
				for i := range v.NumField() {
					switch v.Type().Field(i).Name {
					case "TypeMeta", "ObjectMeta", "Status":
					default:
						v.Field(i).Set(o.Field(i))
					}
				}
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList { return d.status(obj.(T), old.(T)) },
		}}
	}
	return s
}
