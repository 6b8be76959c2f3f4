package registry

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kite-project/kite/storage/watchcache"
)

// Options configure a Store.
type Options struct {
	// Strategy describes the resource. Required.
	Strategy *Strategy
	// Storage holds the objects; keys given to it start with
	// "/<StoragePrefix>/". Required.
	Storage storage.Interface
	// FieldManagers computes managedFields and serves server-side apply.
	// nil means managedFields are left as they are.
	FieldManagers *FieldManagers
	// Admission, if set, is the admission chain every write goes
	// through (see Admission for the order).
	Admission Admission
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Peers, if set, returns the served store of another group resource
	// ("poddisruptionbudgets.policy"), or nil: what a subresource that
	// acts on more than its own resource reaches (pods/eviction reads
	// and writes the pod's disruption budgets, as upstream's
	// EvictionREST does through a client).
	Peers func(groupResource string) *Store
}

// Store serves the REST verbs of one resource over a storage.Interface.
// It is safe for concurrent use and holds no state besides its options.
type Store struct {
	strategy  *Strategy
	storage   storage.Interface
	fields    *FieldManagers
	admission Admission
	now       func() time.Time
	peers     func(groupResource string) *Store
	prefix    string // "/pods"
}

// New returns a Store for opts.Strategy.
func New(opts Options) (*Store, error) {
	switch {
	case opts.Strategy == nil:
		return nil, errors.New("registry: Options.Strategy is required")
	case opts.Storage == nil && opts.Strategy.Stored():
		return nil, fmt.Errorf("registry: Options.Storage is required for %s", opts.Strategy.Resource)
	case opts.Strategy.New == nil || (opts.Strategy.NewList == nil && (opts.Strategy.Stored() || opts.Strategy.Computed != nil)):
		return nil, fmt.Errorf("registry: Strategy.New and NewList are required for %s", opts.Strategy.Resource)
	}
	s := &Store{
		strategy:  opts.Strategy,
		storage:   opts.Storage,
		fields:    opts.FieldManagers,
		admission: opts.Admission,
		now:       opts.Now,
		peers:     opts.Peers,
		prefix:    "/" + opts.Strategy.storagePrefix(),
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.fields != nil && opts.Strategy.ApplySchema != nil {
		tc, err := opts.Strategy.ApplySchema()
		if err != nil {
			return nil, fmt.Errorf("registry: %s: %w", opts.Strategy.Resource, err)
		}
		s.fields.SetTyped(tc, opts.Strategy.Kind)
	}
	return s, nil
}

// Peer returns the served store of another group resource, or nil when
// it is not served (or the Store was made without Options.Peers).
func (s *Store) Peer(groupResource string) *Store {
	if s.peers == nil {
		return nil
	}
	return s.peers(groupResource)
}

// Strategy returns the resource's strategy.
func (s *Store) Strategy() *Strategy { return s.strategy }

// Storage returns the storage the Store writes to; nil for a virtual
// resource.
func (s *Store) Storage() storage.Interface { return s.storage }

// FieldManager returns the field manager of the subresource ("" for the
// main resource), or nil when managed fields are not tracked. A Scale
// view's is the Scale kind's: its writers manage the Scale, whose
// managed fields the Store converts from and to the parent's.
func (s *Store) FieldManager(subresource string) *managedfields.FieldManager {
	if s.fields == nil {
		return nil
	}
	if sub := s.strategy.Subresources[subresource]; sub != nil && sub.View != nil {
		if sub.ReplicasPaths == nil {
			return nil
		}
		return s.fields.For(sub.Kind, subresource, nil)
	}
	// A subresource that says which fields its writers own has that
	// (upstream's GetResetFieldsFilter: pods/ephemeralcontainers,
	// pods/resize). Otherwise, as upstream's GetResetFields: with a status
	// subresource, writers of the object do not own its status, and
	// status writers not its spec.
	if sub := s.strategy.Subresources[subresource]; sub != nil && sub.ResetFields != nil {
		return s.fields.For(s.strategy.Kind, subresource, sub.ResetFields)
	}
	var reset fieldpath.Filter
	if _, hasStatus := s.strategy.Subresources["status"]; hasStatus {
		switch subresource {
		case "":
			reset = ExcludeFields("status")
		case "status":
			reset = ExcludeFields("spec")
		}
	}
	return s.fields.For(s.strategy.Kind, subresource, reset)
}

// ObjectKey returns the storage key of one object.
func (s *Store) ObjectKey(namespace, name string) string {
	if s.strategy.Namespaced {
		return s.prefix + "/" + namespace + "/" + name
	}
	return s.prefix + "/" + name
}

// collectionKey returns the key prefix of a namespace ("" = all).
func (s *Store) collectionKey(namespace string) string {
	if s.strategy.Namespaced && namespace != "" {
		return s.prefix + "/" + namespace
	}
	return s.prefix
}

// Get returns one object.
func (s *Store) Get(ctx context.Context, namespace, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	if s.strategy.Computed != nil {
		return s.strategy.Computed.Get(ctx, name)
	}
	obj := s.strategy.New()
	if err := s.storage.Get(ctx, s.ObjectKey(namespace, name), storage.GetOptions{ResourceVersion: opts.ResourceVersion}, obj); err != nil {
		return nil, s.interpret(err, name)
	}
	return obj, nil
}

// GetSubresource returns one object as its subresource sub shows it: the
// object itself, or its view (see Subresource.View).
func (s *Store) GetSubresource(ctx context.Context, namespace, name, sub string, opts *metav1.GetOptions) (runtime.Object, error) {
	obj, err := s.Get(ctx, namespace, name, opts)
	if err != nil || sub == "" {
		return obj, err
	}
	if r := s.strategy.Subresources[sub]; r != nil && r.View != nil {
		return r.View(obj)
	}
	return obj, nil
}

// List returns the objects of a namespace ("" = all namespaces) that match
// opts, one page of them when opts.Limit is set.
func (s *Store) List(ctx context.Context, namespace string, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	if s.strategy.Computed != nil {
		return s.listComputed(ctx, opts)
	}
	key, storageOpts, err := s.listOptions(namespace, opts)
	if err != nil {
		return nil, err
	}
	list := s.strategy.NewList()
	if err := s.storage.GetList(ctx, key, storageOpts, list); err != nil {
		return nil, s.interpret(err, "")
	}
	return list, nil
}

// cachedLister is a storage that answers lists with objects that keep
// their encodings: the watch cache.
type cachedLister interface {
	ListCached(ctx context.Context, key string, opts storage.ListOptions) (*watchcache.CachedList, error)
}

// ListCached is List for encoders: the same objects, as CachedObjects
// that keep their encoded bytes, so a response writes each item's bytes
// instead of encoding it again. Over the watch cache these are the cache's
// own objects, shared with every list and watch; over plain storage each
// item is wrapped fresh.
func (s *Store) ListCached(ctx context.Context, namespace string, opts *metainternalversion.ListOptions) (*watchcache.CachedList, error) {
	if s.strategy.Computed != nil {
		return s.listComputedCached(ctx, opts)
	}
	key, storageOpts, err := s.listOptions(namespace, opts)
	if err != nil {
		return nil, err
	}
	if cl, ok := s.storage.(cachedLister); ok {
		list, err := cl.ListCached(ctx, key, storageOpts)
		if err != nil {
			return nil, s.interpret(err, "")
		}
		return list, nil
	}
	list := s.strategy.NewList()
	if err := s.storage.GetList(ctx, key, storageOpts, list); err != nil {
		return nil, s.interpret(err, "")
	}
	out, err := watchcache.NewCachedList(list)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s.prefix, err)
	}
	return out, nil
}

// listOptions turns list options into a storage key and options.
func (s *Store) listOptions(namespace string, opts *metainternalversion.ListOptions) (string, storage.ListOptions, error) {
	pred, err := s.predicate(opts)
	if err != nil {
		return "", storage.ListOptions{}, err
	}
	key, recursive := s.listKey(namespace, pred)
	return key, storage.ListOptions{
		ResourceVersion:      opts.ResourceVersion,
		ResourceVersionMatch: opts.ResourceVersionMatch,
		Predicate:            pred,
		Recursive:            recursive,
	}, nil
}

// Watch streams changes of the objects of a namespace ("" = all) that
// match opts. The watch ends when ctx ends or the caller stops it.
func (s *Store) Watch(ctx context.Context, namespace string, opts *metainternalversion.ListOptions) (watch.Interface, error) {
	pred, err := s.predicate(opts)
	if err != nil {
		return nil, err
	}
	// A watch never pages.
	pred.Limit, pred.Continue = 0, ""
	key, recursive := s.listKey(namespace, pred)
	w, err := s.storage.Watch(ctx, key, storage.ListOptions{
		ResourceVersion:      opts.ResourceVersion,
		ResourceVersionMatch: opts.ResourceVersionMatch,
		Predicate:            pred,
		Recursive:            recursive,
		SendInitialEvents:    opts.SendInitialEvents,
	})
	if err != nil {
		return nil, s.interpret(err, "")
	}
	return w, nil
}

// listKey narrows a list or watch to one object when the field selector
// names it, as upstream does, so storage reads one key instead of a range.
func (s *Store) listKey(namespace string, pred storage.SelectionPredicate) (string, bool) {
	if name, ok := pred.MatchesSingle(); ok && (namespace != "" || !s.strategy.Namespaced) {
		return s.ObjectKey(namespace, name), false
	}
	return s.collectionKey(namespace), true
}

// predicate turns list options into a storage selection predicate,
// refusing field selectors on fields the resource does not offer.
func (s *Store) predicate(opts *metainternalversion.ListOptions) (storage.SelectionPredicate, error) {
	label := opts.LabelSelector
	if label == nil {
		label = labels.Everything()
	}
	field := opts.FieldSelector
	if field == nil {
		field = fields.Everything()
	}
	for _, req := range field.Requirements() {
		if !s.isFieldLabel(req.Field) {
			return storage.SelectionPredicate{}, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
		}
	}
	return storage.SelectionPredicate{
		Label:               label,
		Field:               field,
		GetAttrs:            s.GetAttrs,
		IndexFields:         s.strategy.IndexFields,
		Limit:               opts.Limit,
		Continue:            opts.Continue,
		AllowWatchBookmarks: opts.AllowWatchBookmarks,
	}, nil
}

func (s *Store) isFieldLabel(name string) bool {
	if name == "metadata.name" || (name == "metadata.namespace" && s.strategy.Namespaced) {
		return true
	}
	for _, f := range s.strategy.FieldLabels {
		if f == name {
			return true
		}
	}
	return false
}

// GetAttrs returns the labels and selectable fields of an object: the
// storage.AttrFunc of the resource.
func (s *Store) GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	return s.strategy.GetAttrs(obj)
}

// GetAttrs returns the labels and selectable fields of an object of the
// resource (always metadata.name, and metadata.namespace when
// namespaced): the resource's storage.AttrFunc.
func (s *Strategy) GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil, fmt.Errorf("read metadata of %T: %w", obj, err)
	}
	var set fields.Set
	if s.SelectableFields != nil {
		set = s.SelectableFields(obj)
	}
	if set == nil {
		set = fields.Set{}
	}
	set["metadata.name"] = m.GetName()
	if s.Namespaced {
		set["metadata.namespace"] = m.GetNamespace()
	}
	return labels.Set(m.GetLabels()), set, nil
}

// validateName returns the name validation of the resource.
func (s *Store) validateName() apivalidation.ValidateNameFunc {
	if s.strategy.ValidateName != nil {
		return s.strategy.ValidateName
	}
	return apivalidation.NameIsDNSSubdomain
}
