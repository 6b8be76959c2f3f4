package crdserving

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/klog/v2"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/kite-project/kite/apiserver/openapi"
	"github.com/kite-project/kite/registry"
	"github.com/kite-project/kite/registry/apiextensions"
	"github.com/kite-project/kite/registry/table"
	"github.com/kite-project/kite/resourceset"
)

// installer serves the custom resources of Established CRDs through
// the resource set: one stack per served version, all over the same etcd
// keys (/registry/<group>/<plural>/...), JSON in the storage version as
// kube-apiserver stores them. The follower (follower.go) drives it from the CRD
// objects.
type installer struct {
	ctx       context.Context // stacks run under it
	resources *resourceset.Set
	// conversions makes the converters of CRDs with a conversion
	// webhook.
	conversions *apiextensions.Conversions

	// mu guards served and orders installs.
	mu     sync.Mutex
	served map[string]*servedCRD // by CRD name

	// columnsMu guards columns, read by every Table request.
	columnsMu sync.RWMutex
	columns   map[schema.GroupVersionKind]*table.Columns // by kind and list kind
}

// tableColumns returns the printer columns of a custom resource kind or
// list kind, or nil.
func (c *installer) tableColumns(gvk schema.GroupVersionKind) *table.Columns {
	c.columnsMu.RLock()
	defer c.columnsMu.RUnlock()
	return c.columns[gvk]
}

func (c *installer) setColumns(gvks []schema.GroupVersionKind, cols *table.Columns) {
	c.columnsMu.Lock()
	defer c.columnsMu.Unlock()
	if c.columns == nil {
		c.columns = map[schema.GroupVersionKind]*table.Columns{}
	}
	for _, gvk := range gvks {
		if cols == nil {
			delete(c.columns, gvk)
		} else {
			c.columns[gvk] = cols
		}
	}
}

// servedCRD is what one CRD's resource is served as.
type servedCRD struct {
	uid        types.UID
	generation int64
	spec       apiextensionsv1.CustomResourceDefinitionSpec
	names      apiextensionsv1.CustomResourceDefinitionNames
	gvrs       []schema.GroupVersionResource
	kinds      []schema.GroupVersionKind // kinds and list kinds with columns
	// terminating is set once the CRD's deletion began.
	terminating atomic.Bool
	storage     *registry.Store
	// raw, for a CRD with a conversion webhook, is the stack that holds
	// its objects as they are stored (in any of its versions), which
	// every served version converts through; it is not routed.
	raw *resourceset.Stack
}

// stop stops the stack that is not routed (the routed ones are the
// set's to stop).
func (s *servedCRD) stop() {
	if s != nil && s.raw != nil {
		s.raw.Stop()
	}
}

// Install serves the resources of Established CRDs from now on, or
// serves them anew when their spec or accepted names changed; a CRD
// served as it is is left alone. A CRD served anew keeps its old stacks
// serving until the new ones take over in the same change, so its
// custom resources never answer 404 in between (upstream swaps a CRD's
// handler the same way). A CRD that is Terminating is served terminating
// from the start. The API server and the OpenAPI documents take all of
// them as one change; should that fail, each is tried alone, so that one
// CRD's trouble keeps no other from being served (a CRD that fails is
// served by neither its old stacks nor new ones).
func (c *installer) Install(ctx context.Context, crds ...*apiextensionsv1.CustomResourceDefinition) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	var batch []*builtCRD
	for _, crd := range crds {
		if cur := c.served[crd.Name]; cur != nil {
			// Most events change only the status: the spec is the same
			// when its generation is (generation moves with every spec
			// change), which is cheaper to see than comparing schemas.
			sameSpec := cur.generation == crd.Generation || apiequality.Semantic.DeepEqual(cur.spec, crd.Spec)
			if cur.uid == crd.UID && sameSpec && apiequality.Semantic.DeepEqual(cur.names, crd.Status.AcceptedNames) {
				cur.generation = max(cur.generation, crd.Generation)
				continue
			}
		}
		b, err := c.build(crd)
		if err != nil {
			c.uninstallLocked(crd.Name)
			errs = append(errs, fmt.Errorf("CRD %s: %w", crd.Name, err))
			continue
		}
		b.replaces = c.served[crd.Name]
		batch = append(batch, b)
	}
	if err := c.serve(batch); err != nil {
		for _, b := range batch {
			if len(batch) > 1 {
				err = c.serve([]*builtCRD{b})
			}
			if err != nil {
				c.discard(b)
				c.uninstallLocked(b.name)
				errs = append(errs, fmt.Errorf("CRD %s: %w", b.name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// builtCRD is a CRD's resource ready to be served: its stacks built (and
// running), not yet routed.
type builtCRD struct {
	name   string
	served *servedCRD
	stacks []*resourceset.Stack
	// replaces is what serves the CRD until these stacks take over, nil
	// for a CRD served for the first time.
	replaces *servedCRD
}

// build makes the stacks of crd's served versions and sets their Table
// columns.
func (c *installer) build(crd *apiextensionsv1.CustomResourceDefinition) (_ *builtCRD, err error) {
	storageVersion := storedVersion(crd)
	s := &servedCRD{uid: crd.UID, generation: crd.Generation, spec: *crd.Spec.DeepCopy(), names: *crd.Status.AcceptedNames.DeepCopy()}
	s.terminating.Store(apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Terminating))
	b := &builtCRD{name: crd.Name, served: s}
	defer func() {
		if err != nil {
			c.discard(b)
		}
	}()
	var converter *apiextensions.WebhookConverter
	if conv := crd.Spec.Conversion; conv != nil && conv.Strategy == apiextensionsv1.WebhookConverter {
		if converter, err = c.buildRaw(s, crd, storageVersion); err != nil {
			return nil, err
		}
	}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		strat, err := apiextensions.CustomResourceStrategy(crd, v.Name)
		if err != nil {
			return nil, err
		}
		strat.Terminating = s.terminating.Load
		cols, err := apiextensions.Columns(crd, v.Name)
		if err != nil {
			return nil, err
		}
		kinds := []schema.GroupVersionKind{strat.Kind, strat.Kind.GroupVersion().WithKind(crd.Status.AcceptedNames.ListKind)}
		c.setColumns(kinds, cols)
		s.kinds = append(s.kinds, kinds...)
		codec := newVersionCodec(crd, v.Name, storageVersion, strat)
		oa, err := crdOpenAPI(crd, v.Name, strat)
		if err != nil {
			return nil, err
		}
		so := resourceset.StackOptions{Codec: codec, OpenAPI: oa}
		if converter != nil {
			// Every version, the storage version too (objects written
			// before the storage version changed are in another),
			// converts through the one stack of stored objects.
			strat.StoredWith = strat.GroupResource()
			strat.Conversion = apiextensions.WebhookConversion(crd, v.Name, strat, converter)
			so.StoredWith = s.raw.Store.Storage()
		}
		st, err := c.resources.Builder().Build(c.ctx, strat, so)
		if err != nil {
			return nil, err
		}
		if converter != nil && v.Name == storageVersion {
			st.Etcd = s.raw.Etcd // its objects are counted as the resource's
		}
		b.stacks = append(b.stacks, st)
		s.gvrs = append(s.gvrs, strat.GroupVersionResource())
		if v.Name == storageVersion {
			s.storage = st.Store
		}
	}
	return b, nil
}

// buildRaw builds the stack of a CRD's stored objects as they are, for
// the CRD's conversion webhook to convert (s.raw), and returns the
// webhook's converter.
func (c *installer) buildRaw(s *servedCRD, crd *apiextensionsv1.CustomResourceDefinition, storageVersion string) (*apiextensions.WebhookConverter, error) {
	if c.conversions == nil {
		return nil, fmt.Errorf("conversion webhooks are not served")
	}
	converter, err := c.conversions.Converter(crd)
	if err != nil {
		return nil, err
	}
	strat, err := apiextensions.CustomResourceStrategy(crd, storageVersion)
	if err != nil {
		return nil, err
	}
	// Stored objects are read as they were written: pruning and
	// defaults are each served version's, after conversion.
	strat.Default = nil
	s.raw, err = c.resources.Builder().Build(c.ctx, strat, resourceset.StackOptions{Codec: unstructured.UnstructuredJSONScheme})
	if err != nil {
		return nil, fmt.Errorf("storage of %s: %w", crd.Name, err)
	}
	return converter, nil
}

// serve routes the built CRDs' resources as one change, in place of
// what served them before.
func (c *installer) serve(batch []*builtCRD) error {
	if len(batch) == 0 {
		return nil
	}
	var all []*resourceset.Stack
	var old []schema.GroupVersionResource
	for _, b := range batch {
		all = append(all, b.stacks...)
		if b.replaces != nil {
			old = append(old, b.replaces.gvrs...)
		}
	}
	err := c.resources.Replace(old, all, func(oa resourceset.OpenAPIUpdater) {
		for _, b := range batch {
			for i := 0; i < len(b.served.kinds); i += 2 { // kind, list kind
				c.enableApply(oa, b.served.kinds[i])
			}
		}
	})
	if err != nil {
		return err
	}
	for _, b := range batch {
		if b.replaces != nil {
			// The new serving set its own columns and schemas over the
			// old one's; only the kinds it no longer has are dropped.
			c.forget(b.replaces, b.served.kinds)
			b.replaces.stop()
		}
		c.served[b.name] = b.served
	}
	return nil
}

// discard stops the stacks of a CRD that was built but is not served.
func (c *installer) discard(b *builtCRD) {
	for _, st := range b.stacks {
		st.Stop()
	}
	b.served.stop()
	c.forget(b.served, nil)
}

// forget drops what serving s left outside the resource set, its field
// managers' schemas and its Table columns, but for the kinds in keep
// (which a new serving of the same CRD has set again).
func (c *installer) forget(s *servedCRD, keep []schema.GroupVersionKind) {
	var gone []schema.GroupVersionKind
	for i := 0; i < len(s.kinds); i += 2 { // kind, list kind
		if slices.Contains(keep, s.kinds[i]) {
			continue
		}
		c.resources.Builder().FieldManagers().SetCustom(s.kinds[i], nil)
		gone = append(gone, s.kinds[i], s.kinds[i+1])
	}
	c.setColumns(gone, nil)
}

// Uninstall stops serving the resource of the CRD named name.
func (c *installer) Uninstall(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.uninstallLocked(name)
}

func (c *installer) uninstallLocked(name string) {
	if s := c.served[name]; s != nil {
		if err := c.resources.Remove(s.gvrs...); err != nil {
			klog.ErrorS(err, "Custom resources still served", "crd", name)
		}
		c.forget(s, nil)
		s.stop()
		delete(c.served, name)
	}
}

// Terminate marks the CRD's resource as going away: creates are refused
// from now on and discovery shows it read-and-delete only.
func (c *installer) Terminate(name string) error {
	c.mu.Lock()
	s := c.served[name]
	c.mu.Unlock()
	if s == nil || s.terminating.Swap(true) {
		return nil
	}
	return c.resources.Republish()
}

// installed reports whether crd's resource is served as crd (or a later
// generation of it) says.
func (c *installer) installed(crd *apiextensionsv1.CustomResourceDefinition) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.served[crd.Name]
	return s != nil && s.uid == crd.UID && s.generation >= crd.Generation
}

// serves reports whether crd's resource is served as crd (or a later
// generation of it) says, with its watch cache filled: the follower
// installs only Established CRDs, so crd is Established too.
func (c *installer) serves(crd *apiextensionsv1.CustomResourceDefinition) bool {
	if !c.installed(crd) {
		return false
	}
	store := c.Instances(crd.Name)
	return store == nil || store.Storage().ReadinessCheck() == nil
}

// storedVersion is the name of crd's storage version.
func storedVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// DeleteUnserved deletes the custom resources of a deleted CRD none of
// whose versions is served, through a store of its storage version made
// for the purpose, and returns how many are left (held by finalizers of
// their own). Upstream's finalizer deletes them through the storage
// version's storage, which upstream builds served or not; no client can
// reach them through the API, so the CRD controller asks the server.
func (c *installer) DeleteUnserved(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (int, error) {
	version := storedVersion(crd)
	strat, err := apiextensions.CustomResourceStrategy(crd, version)
	if err != nil {
		return 0, err
	}
	st, err := c.resources.Builder().Build(ctx, strat, resourceset.StackOptions{Codec: newVersionCodec(crd, version, version, strat), Uncached: true})
	if err != nil {
		return 0, fmt.Errorf("storage of %s %s: %w", crd.Name, version, err)
	}
	defer st.Stop()
	if _, err := st.Store.DeleteCollection(ctx, metav1.NamespaceAll, &metainternalversion.ListOptions{}, &metav1.DeleteOptions{}); err != nil {
		return 0, fmt.Errorf("delete the custom resources of %s: %w", crd.Name, err)
	}
	left, err := st.Store.List(ctx, metav1.NamespaceAll, &metainternalversion.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("list the custom resources of %s: %w", crd.Name, err)
	}
	return meta.LenList(left), nil
}

// Instances returns the store of the CRD's custom resources (its storage
// version), or nil when it is not served.
func (c *installer) Instances(name string) *registry.Store {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.served[name]; s != nil {
		return s.storage
	}
	return nil
}

// enableApply gives the kind's field manager the structured-merge schema
// of its group version's OpenAPI document (list types, map keys), so that
// managed fields are tracked and server-side apply works. The schema is
// read on the kind's first write, not now: the v3 document it comes from
// is built on demand, and serving a CRD should not wait for it. A schema
// that does not convert leaves writes without managed fields and apply
// refused.
func (c *installer) enableApply(oa resourceset.OpenAPIUpdater, kind schema.GroupVersionKind) {
	if oa == nil {
		return
	}
	c.resources.Builder().FieldManagers().SetCustom(kind, &lazyTypeConverter{build: func() (managedfields.TypeConverter, error) {
		schemas := resourceset.SchemasOf(oa, kind.GroupVersion())
		if schemas == nil {
			return nil, fmt.Errorf("no OpenAPI v3 document for %s", kind.GroupVersion())
		}
		tc, err := managedfields.NewTypeConverter(schemas, false)
		if err != nil {
			klog.ErrorS(err, "Server-side apply off for a custom resource: its schema does not convert", "kind", kind)
		}
		return tc, err
	}})
}

// lazyTypeConverter is a type converter built on first use.
type lazyTypeConverter struct {
	build func() (managedfields.TypeConverter, error)
	once  sync.Once
	tc    managedfields.TypeConverter
	err   error
}

var _ managedfields.TypeConverter = (*lazyTypeConverter)(nil)

func (l *lazyTypeConverter) get() (managedfields.TypeConverter, error) {
	l.once.Do(func() { l.tc, l.err = l.build() })
	return l.tc, l.err
}

func (l *lazyTypeConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	tc, err := l.get()
	if err != nil {
		return nil, err
	}
	return tc.ObjectToTyped(obj, opts...)
}

func (l *lazyTypeConverter) TypedToObject(v *typed.TypedValue) (runtime.Object, error) {
	tc, err := l.get()
	if err != nil {
		return nil, err
	}
	return tc.TypedToObject(v)
}

// newVersionCodec is the etcd codec of crd's version served (its objects
// stored as storedAs).
func newVersionCodec(crd *apiextensionsv1.CustomResourceDefinition, served, storedAs string, strat *registry.Strategy) versionCodec {
	return versionCodec{
		Codec:    unstructured.UnstructuredJSONScheme,
		defaults: strat.Default,
		served:   schema.GroupVersion{Group: crd.Spec.Group, Version: served},
		storedAs: schema.GroupVersion{Group: crd.Spec.Group, Version: storedAs},
	}
}

// versionCodec stores custom resources in the storage version and reads
// them as the served version: with conversion None only apiVersion
// differs between versions, as upstream's nop converter rewrites it.
type versionCodec struct {
	runtime.Codec
	served, storedAs schema.GroupVersion
	// defaults prunes and defaults what is read, as upstream's storage
	// codec does: a default added to the schema shows without a rewrite.
	defaults func(runtime.Object)
}

func (c versionCodec) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	obj, gvk, err := c.Codec.Decode(data, defaults, into)
	if err != nil {
		return obj, gvk, err
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if c.served != c.storedAs {
			u.SetAPIVersion(c.served.String())
		}
		if c.defaults != nil {
			c.defaults(u)
		}
	}
	return obj, gvk, nil
}

func (c versionCodec) Encode(obj runtime.Object, w io.Writer) error {
	if u, ok := obj.(*unstructured.Unstructured); ok && c.served != c.storedAs {
		shallow := &unstructured.Unstructured{Object: make(map[string]any, len(u.Object))}
		for k, v := range u.Object {
			shallow.Object[k] = v
		}
		shallow.SetAPIVersion(c.storedAs.String())
		obj = shallow
	}
	return c.Codec.Encode(obj, w)
}

// crdOpenAPI describes one served version of a CRD to the OpenAPI
// documents: its Strategy's description with the version's schema.
func crdOpenAPI(crd *apiextensionsv1.CustomResourceDefinition, version string, strat *registry.Strategy) (*openapi.Resource, error) {
	sch, name, err := apiextensions.OpenAPI(crd, version)
	if err != nil {
		return nil, err
	}
	r := resourceset.Describe(strat)
	r.Schema, r.DefinitionName = sch, name
	return &r, nil
}
