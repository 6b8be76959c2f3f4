package apiextensions

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	internal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	schemavalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/kite-project/kite/registry"
)

// CustomResourceStrategy returns the strategy of the custom resources of
// an Established CRD in one of its versions, as upstream's
// registry/customresource: objects are unstructured; Default prunes
// unknown fields and applies the schema's defaults; validation is the
// OpenAPI schema, then the CEL rules (oldSelf transition rules on
// update) within upstream's cost budget; with a status subresource, spec
// and status writes are separated and generation follows the spec.
func CustomResourceStrategy(crd *apiextensionsv1.CustomResourceDefinition, version string) (*registry.Strategy, error) {
	var ver *apiextensionsv1.CustomResourceDefinitionVersion
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == version {
			ver = &crd.Spec.Versions[i]
		}
	}
	if ver == nil {
		return nil, fmt.Errorf("CRD %s has no version %q", crd.Name, version)
	}
	names := crd.Status.AcceptedNames
	gvk := schemaGVK(crd.Spec.Group, version, names.Kind)
	s := &customResource{gvk: gvk}
	if ver.Subresources != nil {
		s.scale = ver.Subresources.Scale
	}
	if ver.Schema != nil && ver.Schema.OpenAPIV3Schema != nil {
		in := &internal.JSONSchemaProps{}
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(ver.Schema.OpenAPIV3Schema, in, nil); err != nil {
			return nil, fmt.Errorf("CRD %s version %s: schema: %w", crd.Name, version, err)
		}
		structural, err := structuralschema.NewStructural(in)
		if err != nil {
			return nil, fmt.Errorf("CRD %s version %s: structural schema: %w", crd.Name, version, err)
		}
		validator, _, err := schemavalidation.NewSchemaValidator(in)
		if err != nil {
			return nil, fmt.Errorf("CRD %s version %s: schema validator: %w", crd.Name, version, err)
		}
		s.structural, s.validator = structural, validator
		if st, ok := in.Properties["status"]; ok {
			if s.statusValidator, _, err = schemavalidation.NewSchemaValidator(&st); err != nil {
				return nil, fmt.Errorf("CRD %s version %s: status schema validator: %w", crd.Name, version, err)
			}
		}
		// CEL rules compile on the first write that needs them, not
		// when the resource is installed: compiling (mostly building
		// the rules' type environment) is the largest cost of serving a
		// CRD, and the CRD's own validation has already compiled them
		// once to check them.
		s.cel = sync.OnceValue(func() *cel.Validator { return cel.NewValidator(structural, true, celconfig.PerCallLimit) })
	}
	hasStatus := ver.Subresources != nil && ver.Subresources.Status != nil
	strat := &registry.Strategy{
		Kind:          gvk,
		Resource:      names.Plural,
		SingularName:  names.Singular,
		ShortNames:    names.ShortNames,
		Categories:    names.Categories,
		Namespaced:    crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		StoragePrefix: crd.Spec.Group + "/" + names.Plural,
		New: func() runtime.Object {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			return u
		},
		NewList: func() runtime.Object {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(gvk.GroupVersion().WithKind(names.ListKind))
			return l
		},
		Default:      s.defaults,
		PruneUnknown: s.pruneUnknown,
		PrepareForCreate: func(obj runtime.Object) {
			u := obj.(*unstructured.Unstructured)
			if hasStatus {
				delete(u.Object, "status")
			}
			u.SetGeneration(1)
		},
		PrepareForUpdate: func(obj, old runtime.Object) {
			u, o := obj.(*unstructured.Unstructured), old.(*unstructured.Unstructured)
			if hasStatus {
				if st, ok := o.Object["status"]; ok {
					u.Object["status"] = runtime.DeepCopyJSONValue(st)
				} else {
					delete(u.Object, "status")
				}
			}
			if !apiequality.Semantic.DeepEqual(withoutMeta(u), withoutMeta(o)) {
				u.SetGeneration(o.GetGeneration() + 1)
			} else {
				u.SetGeneration(o.GetGeneration())
			}
		},
		SelectableFields:         selectableFields(ver.SelectableFields),
		FieldLabels:              fieldLabels(ver.SelectableFields),
		Validate:                 func(obj runtime.Object) field.ErrorList { return s.validate(obj, nil) },
		ValidateUpdate:           func(obj, old runtime.Object) field.ErrorList { return s.validate(obj, old) },
		AllowUnconditionalUpdate: true,
	}
	if ver.Deprecated {
		if ver.DeprecationWarning != nil {
			strat.Warnings = []string{*ver.DeprecationWarning}
		} else {
			strat.Warnings = []string{deprecationWarning(version, crd.Spec)}
		}
	}
	strat.Subresources = map[string]*registry.Subresource{}
	if ver.Subresources != nil && ver.Subresources.Scale != nil {
		strat.Subresources["scale"] = scaleSubresource(crd, ver.Subresources.Scale, strat.PrepareForUpdate)
	}
	if hasStatus {
		strat.Subresources["status"] = &registry.Subresource{
			PrepareForUpdate: func(obj, old runtime.Object) {
				u, o := obj.(*unstructured.Unstructured), old.(*unstructured.Unstructured)
				st, has := u.Object["status"]
				fresh := o.DeepCopy()
				delete(fresh.Object, "status")
				if has {
					fresh.Object["status"] = st
				}
				fresh.SetResourceVersion(u.GetResourceVersion())
				fresh.SetManagedFields(u.GetManagedFields())
				u.Object = fresh.Object
			},
			ValidateUpdate: s.validateStatus,
		}
	}
	return strat, nil
}

func schemaGVK(group, version, kind string) (gvk schema.GroupVersionKind) {
	gvk.Group, gvk.Version, gvk.Kind = group, version, kind
	return gvk
}

// withoutMeta is the object without metadata: what a spec change is
// measured on.
func withoutMeta(u *unstructured.Unstructured) map[string]any {
	out := make(map[string]any, len(u.Object))
	for k, v := range u.Object {
		if k != "metadata" {
			out[k] = v
		}
	}
	return out
}

// customResource is one CRD version's schema machinery.
type customResource struct {
	gvk        schema.GroupVersionKind
	structural *structuralschema.Structural // nil: no schema
	validator  schemavalidation.SchemaValidator
	// statusValidator checks status writes against properties.status.
	statusValidator schemavalidation.SchemaValidator
	// cel returns the validator of the CEL rules, nil when there are
	// none; cel is nil when there is no schema.
	cel func() *cel.Validator
	// scale is the version's scale subresource, whose replicas paths
	// every write must keep valid; nil: none.
	scale *apiextensionsv1.CustomResourceSubresourceScale
}

// rules returns the CEL validator, compiling it on first use; nil when
// there are no rules.
func (s *customResource) rules() *cel.Validator {
	if s.cel == nil {
		return nil
	}
	return s.cel()
}

// defaults prunes unknown fields and fills defaults, as upstream's
// schema-coercing decoder and defaulter do.
func (s *customResource) defaults(obj runtime.Object) {
	if s.structural == nil {
		return
	}
	u := obj.(*unstructured.Unstructured)
	pruning.PruneWithOptions(u.Object, s.structural, true, structuralschema.UnknownFieldPathOptions{})
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, s.structural)
	structuraldefaulting.Default(u.Object, s.structural)
}

// pruneUnknown drops undeclared fields and returns their paths.
func (s *customResource) pruneUnknown(obj runtime.Object) []string {
	if s.structural == nil {
		return nil
	}
	return pruning.PruneWithOptions(obj.(*unstructured.Unstructured).Object, s.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
}

// validate is upstream's customResourceValidator: the apiVersion and kind,
// then the OpenAPI schema, then CEL (unless an earlier error blocks it).
func (s *customResource) validate(obj, old runtime.Object) field.ErrorList {
	u := obj.(*unstructured.Unstructured)
	var errs field.ErrorList
	if u.GetAPIVersion() != s.gvk.GroupVersion().String() {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), u.GetAPIVersion(), "must be "+s.gvk.GroupVersion().String()))
	}
	if u.GetKind() != s.gvk.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), u.GetKind(), "must be "+s.gvk.Kind))
	}
	if len(errs) > 0 {
		return errs
	}
	if s.validator == nil {
		return append(s.validateScaleReplicas(u, true), s.validateScaleReplicas(u, false)...)
	}
	var oldContent any
	var schemaOpts []schemavalidation.ValidationOption
	var celOpts []cel.Option
	if old != nil {
		// Ratcheting (GA): errors on values an update leaves as they were
		// are dropped, so a tightened schema does not lock old objects.
		oldContent = old.(*unstructured.Unstructured).UnstructuredContent()
		correlated := common.NewCorrelatedObject(u.Object, oldContent, &model.Structural{Structural: s.structural})
		schemaOpts = append(schemaOpts, schemavalidation.WithRatcheting(correlated))
		celOpts = append(celOpts, cel.WithRatcheting(correlated))
		errs = append(errs, schemavalidation.ValidateCustomResourceUpdate(nil, u.UnstructuredContent(), oldContent, s.validator, schemaOpts...)...)
	} else {
		errs = append(errs, schemavalidation.ValidateCustomResource(nil, u.UnstructuredContent(), s.validator)...)
	}
	errs = append(errs, s.validateScaleReplicas(u, true)...)
	errs = append(errs, s.validateScaleReplicas(u, false)...)
	errs = append(errs, objectmeta.Validate(context.Background(), nil, u.Object, s.structural, false)...)
	// Set and map list uniqueness, ratcheted: only if the old object had
	// no such error.
	if old == nil || len(listtype.ValidateListSetsAndMaps(nil, s.structural, oldContent.(map[string]any))) == 0 {
		errs = append(errs, listtype.ValidateListSetsAndMaps(nil, s.structural, u.Object)...)
	}
	rules := s.rules()
	if rules == nil {
		return errs
	}
	if blocking(errs) {
		return append(errs, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"))
	}
	celErrs, _ := rules.Validate(context.Background(), nil, s.structural, u.Object, oldContent, celconfig.RuntimeCELCostBudget, celOpts...)
	return append(errs, celErrs...)
}

// validateStatus is upstream's status strategy validation: the status
// against properties.status (ratcheted), list uniqueness, then CEL over
// the whole object.
func (s *customResource) validateStatus(obj, old runtime.Object) field.ErrorList {
	u, o := obj.(*unstructured.Unstructured), old.(*unstructured.Unstructured)
	var errs field.ErrorList
	if u.GetAPIVersion() != s.gvk.GroupVersion().String() {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), u.GetAPIVersion(), "must be "+s.gvk.GroupVersion().String()))
	}
	if u.GetKind() != s.gvk.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), u.GetKind(), "must be "+s.gvk.Kind))
	}
	if len(errs) > 0 {
		return errs
	}
	if s.structural == nil {
		return s.validateScaleReplicas(u, false)
	}
	correlated := common.NewCorrelatedObject(u.Object, o.Object, &model.Structural{Structural: s.structural})
	if status, ok := u.Object["status"]; ok && s.statusValidator != nil {
		errs = append(errs, schemavalidation.ValidateCustomResourceUpdate(field.NewPath("status"), status, o.Object["status"], s.statusValidator, schemavalidation.WithRatcheting(correlated.Key("status")))...)
	}
	errs = append(errs, s.validateScaleReplicas(u, false)...)
	if newErrs := listtype.ValidateListSetsAndMaps(nil, s.structural, u.Object); len(newErrs) > 0 && len(listtype.ValidateListSetsAndMaps(nil, s.structural, o.Object)) == 0 {
		errs = append(errs, newErrs...)
	}
	rules := s.rules()
	if rules == nil {
		return errs
	}
	if blocking(errs) {
		return append(errs, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"))
	}
	celErrs, _ := rules.Validate(context.Background(), nil, s.structural, u.Object, o.Object, celconfig.RuntimeCELCostBudget, cel.WithRatcheting(correlated))
	return append(errs, celErrs...)
}

// validateScaleReplicas is upstream's ValidateScaleSpec (spec) or
// ValidateScaleStatus: the replicas at the scale's path, where present,
// are an integer in [0, MaxInt32]. The field path is the declared one,
// leading dot included, as upstream reports it.
func (s *customResource) validateScaleReplicas(u *unstructured.Unstructured, spec bool) field.ErrorList {
	if s.scale == nil {
		return nil
	}
	path := s.scale.StatusReplicasPath
	if spec {
		path = s.scale.SpecReplicasPath
	}
	replicas, _, err := unstructured.NestedInt64(u.Object, fieldsOf(path)...)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(field.NewPath(path), replicas, err.Error())}
	case replicas < 0:
		return field.ErrorList{field.Invalid(field.NewPath(path), replicas, "should be a non-negative integer")}
	case replicas > math.MaxInt32:
		return field.ErrorList{field.Invalid(field.NewPath(path), replicas, fmt.Sprintf("should be less than or equal to %v", math.MaxInt32))}
	}
	return nil
}

// blocking is upstream's hasBlockingErr: errors after which CEL rules are
// not run, since the values they would see are of the wrong shape.
func blocking(errs field.ErrorList) bool {
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true
		}
	}
	return false
}

// objectMetaRef is the OpenAPI v2 reference to ObjectMeta's definition,
// as upstream's CRD OpenAPI builder writes it; the v3 documents convert
// it to #/components/schemas/.
const objectMetaRef = "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

// OpenAPI returns a CRD version's object definition for the OpenAPI
// documents and its definition name ("com.example.stable.v1.CronTab", as
// upstream names it), as upstream's CRD OpenAPI builder makes it: the
// structural schema as kube-openapi describes it, with apiVersion, kind
// and metadata described as for every kind. A version without a schema
// is a bare object with no properties: kubectl would take listed
// properties for the only ones allowed (upstream's buildKubeNative).
func OpenAPI(crd *apiextensionsv1.CustomResourceDefinition, version string) (*spec.Schema, string, error) {
	name := util.ToRESTFriendlyName(fmt.Sprintf("%s/%s/%s", crd.Spec.Group, version, crd.Status.AcceptedNames.Kind))
	for _, v := range crd.Spec.Versions {
		if v.Name != version {
			continue
		}
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			return &spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}}}, name, nil
		}
		in := &internal.JSONSchemaProps{}
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, in, nil); err != nil {
			return nil, "", err
		}
		structural, err := structuralschema.NewStructural(in)
		if err != nil {
			return nil, "", err
		}
		s := structural.ToKubeOpenAPI()
		typeMeta := metav1.TypeMeta{}.SwaggerDoc()
		s.SetProperty("apiVersion", *spec.StringProperty().WithDescription(typeMeta["apiVersion"]))
		s.SetProperty("kind", *spec.StringProperty().WithDescription(typeMeta["kind"]))
		s.SetProperty("metadata", *spec.RefSchema(objectMetaRef).WithDescription(metav1beta1.PartialObjectMetadata{}.SwaggerDoc()["metadata"]))
		return s, name, nil
	}
	return nil, "", fmt.Errorf("CRD %s has no version %q", crd.Name, version)
}

// fieldLabels are the field selector names of a version's
// selectableFields: their JSON paths without the leading dot.
func fieldLabels(sf []apiextensionsv1.SelectableField) []string {
	var out []string
	for _, f := range sf {
		out = append(out, strings.TrimPrefix(f.JSONPath, "."))
	}
	return out
}

// selectableFields returns the selectable field values of a custom
// resource, as upstream: a scalar's string form, "" when absent.
// contentReader is what selectable fields are read from: an
// *unstructured.Unstructured, or the watch cache's compact form of one.
type contentReader interface{ UnstructuredContent() map[string]any }

func selectableFields(sf []apiextensionsv1.SelectableField) func(runtime.Object) fields.Set {
	if len(sf) == 0 {
		return nil
	}
	labels := fieldLabels(sf)
	return func(obj runtime.Object) fields.Set {
		content := map[string]any{}
		if u, ok := obj.(contentReader); ok {
			content = u.UnstructuredContent()
		}
		set := fields.Set{}
		for _, l := range labels {
			v, found, err := unstructured.NestedFieldNoCopy(content, strings.Split(l, ".")...)
			if err != nil || !found || v == nil {
				set[l] = ""
				continue
			}
			set[l] = fmt.Sprint(v)
		}
		return set
	}
}

// deprecationWarning is upstream's default warning for a deprecated
// version: "<group>/<version> <Kind> is deprecated; use <group>/<newest
// served, not deprecated, newer version> <Kind>".
func deprecationWarning(deprecated string, crd apiextensionsv1.CustomResourceDefinitionSpec) string {
	msg := fmt.Sprintf("%s/%s %s is deprecated", crd.Group, deprecated, crd.Names.Kind)
	var newer []string
	for _, v := range crd.Versions {
		if v.Served && !v.Deprecated && version.CompareKubeAwareVersionStrings(deprecated, v.Name) < 0 {
			newer = append(newer, v.Name)
		}
	}
	if len(newer) == 0 {
		return msg
	}
	slices.SortFunc(newer, func(a, b string) int { return -version.CompareKubeAwareVersionStrings(a, b) })
	return msg + fmt.Sprintf("; use %s/%s %s", crd.Group, newer[0], crd.Names.Kind)
}
