package registry

import (
	"context"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kite-project/kite/storage/intern"
)

// Strategy describes one resource to a Store. Only the identity fields and
// New/NewList are required; every func may be nil, meaning "nothing
// special".
type Strategy struct {
	// Kind is the group, version and kind of the objects, e.g. v1 Pod.
	Kind schema.GroupVersionKind
	// Resource is the plural lower-case name, e.g. "pods".
	Resource string
	// SingularName, ShortNames and Categories are what discovery
	// advertises (kubectl resolves "po" and "all" through them).
	SingularName string
	ShortNames   []string
	Categories   []string
	// Namespaced tells whether objects live in a namespace.
	Namespaced bool
	// StoragePrefix is the resource's key segment; "" means Resource.
	StoragePrefix string

	// StoredWith, when set, names another resource whose storage holds
	// this resource's objects, converted by Conversion (events.k8s.io
	// events live with core events, as upstream).
	StoredWith schema.GroupResource
	Conversion *Conversion

	// Virtual, when set, makes the resource one that is not stored (the
	// self reviews of authorization and authentication): POST runs it on
	// the posted object and answers what it returns; no other verb is
	// served, and the Store needs no storage.
	Virtual func(ctx context.Context, obj runtime.Object) (runtime.Object, error)

	// Computed, when set, makes the resource one that is not stored but
	// computed on every read (componentstatuses): get and list only.
	Computed *Computed

	// CreateVia, when set ("pods/binding"), makes the resource a
	// create-only alias of a subresource of another resource of its
	// group: POST of an object named N is a POST of <resource>/N/<sub>
	// (core bindings, upstream's LegacyBindingREST).
	CreateVia string

	// NoDeleteCollection leaves deletecollection out of the verbs
	// (namespaces, whose upstream storage has none: 405).
	NoDeleteCollection bool

	// New returns an empty object, NewList an empty list.
	New     func() runtime.Object
	NewList func() runtime.Object

	// Default fills defaults into a decoded object before anything else
	// looks at it (upstream's v1 defaulting).
	Default func(obj runtime.Object)
	// PruneUnknown, if set, drops the fields the resource's schema does
	// not declare from a written object and returns their paths (custom
	// resources); the Store then refuses them (fieldValidation=Strict),
	// warns about them (Warn, the default) or says nothing (Ignore).
	PruneUnknown func(obj runtime.Object) []string
	// PrepareForCreate clears what a client may not set on create (status
	// for most resources) and sets what the server owns.
	PrepareForCreate func(obj runtime.Object)
	// PrepareForCreateFromRequest, when set, runs just after
	// PrepareForCreate with the request's context: what the server sets
	// from the request itself (a CertificateSigningRequest's requestor,
	// from the request's user, as upstream's PrepareForCreate(ctx, obj)).
	// A separate hook so that the strategies that need no context keep
	// their simpler signature.
	PrepareForCreateFromRequest func(ctx context.Context, obj runtime.Object)
	// PrepareForUpdate makes obj keep what an update of the main resource
	// may not change (status), copying it from old.
	PrepareForUpdate func(obj, old runtime.Object)
	// ValidateName checks metadata.name (and generateName); nil means a
	// DNS-1123 subdomain, as for most resources.
	ValidateName apivalidation.ValidateNameFunc
	// ValidatesMetadata says Validate and ValidateUpdate check the object
	// metadata themselves (as upstream's per-kind validation does), so the
	// Store does not check it a second time.
	ValidatesMetadata bool
	// Validate and ValidateUpdate return field errors for an object about
	// to be created or updated; the Store turns them into 422 Invalid.
	// Object metadata is validated by the Store itself.
	Validate       func(obj runtime.Object) field.ErrorList
	ValidateUpdate func(obj, old runtime.Object) field.ErrorList

	// SelectableFields returns the fields a field selector may use besides
	// metadata.name and metadata.namespace, which the Store always adds.
	// FieldLabels lists their names, so that a selector on anything else
	// is refused with 400 as upstream does.
	SelectableFields func(obj runtime.Object) fields.Set
	FieldLabels      []string
	// IndexFields are the selectable fields worth indexing (pods:
	// spec.nodeName); the watch cache uses the first as its trigger.
	IndexFields []string
	// Intern, if set, shares through t the parts of a cached object that
	// objects of this resource tend to have in common, beyond the
	// metadata the watch cache interns for every resource (see
	// watchcache.Options.Intern).
	Intern func(t *intern.Table, obj runtime.Object)

	// DefaultPropagation is what deleting an object does to its dependents
	// when the request does not say (upstream's
	// DefaultGarbageCollectionPolicy): "" means Background; Orphan puts
	// the orphan finalizer on the object (batch/v1 Jobs).
	DefaultPropagation metav1.DeletionPropagation

	// GracePeriod makes the resource's deletion graceful (upstream's
	// RESTGracefulDeleteStrategy, pods): it returns the grace period of a
	// first DELETE of obj with opts, 0 to delete it at once. The Store
	// sets deletionTimestamp and deletionGracePeriodSeconds from it, and
	// lets a later DELETE shorten them, down to 0 (see Store.Delete).
	GracePeriod func(obj runtime.Object, opts *metav1.DeleteOptions) int64

	// MarkForDeletion, when set, replaces the generic marking of DELETE
	// with the resource's own (upstream's Delete of namespaces and of
	// CustomResourceDefinitions). It returns nil to go on with the generic
	// deletion, or a func that marks the object instead
	// (deletionTimestamp, phase, finalizers, ...), which the Store writes
	// and keeps. An error refuses the delete.
	MarkForDeletion func(obj runtime.Object, opts *metav1.DeleteOptions) (mark func(obj runtime.Object), err error)

	// ShouldDeleteDuringUpdate, when set, is asked besides the generic
	// rule before an update that removes the last finalizer of an object
	// being deleted deletes it (namespaces: only once spec.finalizers is
	// empty too).
	ShouldDeleteDuringUpdate func(obj runtime.Object) bool

	// ApplySchema, when set, returns the structured-merge schema of Kind,
	// for a kind that client-go's compiled-in schema lacks
	// (CustomResourceDefinitions): with it the Store keeps managed fields
	// and serves server-side apply as for any other kind.
	ApplySchema func() (managedfields.TypeConverter, error)

	// Warnings go out with every request to the resource (a deprecated
	// custom resource version's deprecation warning).
	Warnings []string

	// Terminating, when set and true, says the resource is going away (its
	// CustomResourceDefinition is being deleted): creates are refused with
	// 403 and discovery lists only the verbs that remove and read, as
	// upstream; updates still work, so finalizers can be removed.
	Terminating func() bool

	// Allocate, when set, takes what an object holds outside its own key
	// (a Service's cluster IPs and node ports: upstream's BeginCreate and
	// BeginUpdate hooks) and may fill obj with it. It runs after
	// validation, before the write, with old nil on create; under dryRun
	// it checks and takes nothing. finish is called exactly once: true
	// once the write succeeded, false otherwise (it then gives back what
	// it took). An update that retries after a conflict finishes the
	// previous attempt's allocation with false before the next one.
	Allocate func(ctx context.Context, obj, old runtime.Object, dryRun bool) (finish func(ok bool), err error)
	// Release, when set, gives back what a deleted object held, once the
	// object is gone from storage (upstream's AfterDelete).
	Release func(ctx context.Context, obj runtime.Object)
	// AuthorizeWrite, when set, is asked on every create and update with
	// the request's context, the object about to be written and, on
	// update, the stored one (nil on create): checks of the request's user
	// against the object's content, beyond the authorization of the
	// request itself (RBAC's escalation prevention: a role may grant only
	// what its author holds). Its error is returned as it is (403).
	AuthorizeWrite func(ctx context.Context, obj, old runtime.Object) error

	// AllowCreateOnUpdate lets PUT create a missing object.
	AllowCreateOnUpdate bool
	// AllowUnconditionalUpdate lets PUT without resourceVersion overwrite.
	AllowUnconditionalUpdate bool
	// ReturnDeletedObject makes DELETE return the deleted object instead of
	// a Status (pods do).
	ReturnDeletedObject bool
	// TTL returns the time to live in seconds of a new object (events);
	// nil or 0 means forever.
	TTL func(obj runtime.Object) uint64

	// Subresources maps names ("status", "binding", "finalize") to their
	// own rules.
	Subresources map[string]*Subresource
}

// Subresource is a part of a resource with its own update rules (status)
// or its own POST handler (binding).
type Subresource struct {
	// Kind is the kind of the request and response bodies; zero means the
	// parent's.
	Kind schema.GroupVersionKind
	// New returns an empty body object; nil means the parent's New.
	New func() runtime.Object
	// PrepareForUpdate makes obj keep everything the subresource may not
	// change, copying it from old (for status: the spec).
	PrepareForUpdate func(obj, old runtime.Object)
	// ValidateUpdate validates the result; nil means the parent's.
	ValidateUpdate func(obj, old runtime.Object) field.ErrorList
	// View, when set, makes the subresource a different object computed
	// from its parent (an autoscaling/v1 Scale of a Deployment or of a
	// custom resource): reads
	// answer View(parent); an update computes the new view from the
	// current one and Apply writes it back into (a copy of) the parent,
	// whose rules then apply as for the main resource. Both are set or
	// neither.
	View  func(parent runtime.Object) (runtime.Object, error)
	Apply func(parent, view runtime.Object) (runtime.Object, error)
	// ViewForUpdate, when set, is the view an update starts from instead
	// of View's (a custom resource's Scale where replicas are not set:
	// GET fails, an update may set them).
	ViewForUpdate func(parent runtime.Object) (runtime.Object, error)
	// ReplicasPaths, set for a Scale view, maps each group version of the
	// parent ("apps/v1") to its replicas field (nil: that version has no
	// scale). Managed fields then move between the parent and the Scale
	// as upstream's (managedfields.ScaleHandler): a Scale write is
	// recorded, and a Scale apply checked for conflicts, by the Scale's
	// field manager against the parent's owners of replicas. Without it a
	// view takes no server-side apply and its writes are not recorded.
	ReplicasPaths managedfields.ResourcePathMappings
	// ResetFields, when set, filters what the subresource's writers come
	// to own in managedFields (upstream's GetResetFieldsFilter): an
	// include filter of the fields they may change (pods/resize: the
	// containers' resources and resizePolicy). Nil is the default: a
	// status subresource's writers own no spec.
	ResetFields fieldpath.Filter
	// UpdateOnly makes the subresource take PUT alone (namespaces/finalize,
	// as upstream).
	UpdateOnly bool
	// Create handles POST on the subresource (pods/binding). When nil, the
	// subresource takes GET, PUT and PATCH instead (see Verbs).
	Create func(ctx context.Context, store *Store, namespace, name string, body runtime.Object, opts *metav1.CreateOptions) (runtime.Object, error)
}

// GroupResource returns the strategy's group and resource.
func (s *Strategy) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: s.Kind.Group, Resource: s.Resource}
}

// GroupVersionResource returns the strategy's group, version and resource.
func (s *Strategy) GroupVersionResource() schema.GroupVersionResource {
	return s.Kind.GroupVersion().WithResource(s.Resource)
}

// Indexers returns, for each of IndexFields, the function computing that
// field's value: what a watch cache indexes and triggers on.
func (s *Strategy) Indexers() storage.IndexerFuncs {
	if len(s.IndexFields) == 0 || s.SelectableFields == nil {
		return nil
	}
	idx := storage.IndexerFuncs{}
	for _, f := range s.IndexFields {
		idx[f] = func(obj runtime.Object) string { return s.SelectableFields(obj)[f] }
	}
	return idx
}

// KeyFunc returns the function computing an object's storage key under
// "/<KeyPrefix>".
func (s *Strategy) KeyFunc() func(runtime.Object) (string, error) {
	prefix := "/" + s.storagePrefix() + "/"
	if s.Namespaced {
		return func(obj runtime.Object) (string, error) { return storage.NamespaceKeyFunc(prefix, obj) }
	}
	return func(obj runtime.Object) (string, error) { return storage.NoNamespaceKeyFunc(prefix, obj) }
}

// KeyPrefix is the resource's key segment in storage ("pods",
// "minions", "services/specs").
func (s *Strategy) KeyPrefix() string { return s.storagePrefix() }

func (s *Strategy) storagePrefix() string {
	if s.StoragePrefix != "" {
		return s.StoragePrefix
	}
	return s.Resource
}
