package etcd

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/kubernetes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/value"
)

// Options configure a Store. Client, Codec, NewFunc, NewListFunc and
// ResourcePrefix are required.
type Options struct {
	// Client talks to etcd. Its Kubernetes field may be replaced by a
	// wrapper (upstream's test recorders do that); the store sends every
	// key-value read and write through Client.Kubernetes or Client.KV.
	Client *kubernetes.Client
	// Codec encodes objects into etcd values and decodes them back.
	Codec runtime.Codec
	// NewFunc returns an empty object of the resource (used for bookmarks).
	NewFunc func() runtime.Object
	// NewListFunc returns an empty list of the resource.
	NewListFunc func() runtime.Object
	// Prefix is the path prefix of every key, "/registry" in kube-apiserver.
	// "" means "/".
	Prefix string
	// ResourcePrefix is the resource's part of the key, e.g. "/pods". Keys
	// given to the store's methods must start with it.
	ResourcePrefix string
	// GroupResource names the resource in errors.
	GroupResource schema.GroupResource
	// Transformer transforms values on their way to and from etcd
	// (encryption at rest). nil means none, and costs nothing.
	Transformer value.Transformer
	// Versioner reads and writes resourceVersion on objects. nil means
	// storage.APIObjectVersioner.
	Versioner storage.Versioner
	// Compactor tells the store the last compacted revision
	// (CompactRevision). nil means the store observes none.
	Compactor CompactRevisioner
	// Lease configures how leases for objects with a TTL are shared.
	Lease LeaseOptions
	// WatchInitialized, if set, is called with the watch's context once
	// Watch has set a watch up. An API server doing priority and fairness
	// gives k8s.io/apiserver/pkg/util/flowcontrol.WatchInitialized, which
	// releases the request's seat; the store does not depend on it.
	WatchInitialized func(ctx context.Context)
	// UnsafeCorruptObjectDeletion is kube-apiserver's
	// AllowUnsafeMalformedObjectDeletion: reads report corrupt values so
	// that they can be deleted, lists return the good items with the
	// corrupt keys, and Delete honours ExpectTransformOrDecodeError (see
	// corrupt.go).
	UnsafeCorruptObjectDeletion bool
}

// CompactRevisioner reports the last etcd compaction observed; *Compactor
// implements it.
type CompactRevisioner interface {
	CompactRevision() int64
}

// Store is the etcd implementation of storage.Interface. It is safe for
// concurrent use. It starts no goroutines of its own except those of
// watches, which end with the watch's context or Stop.
type Store struct {
	client         *kubernetes.Client
	codec          runtime.Codec
	versioner      storage.Versioner
	transformer    value.Transformer
	newFunc        func() runtime.Object
	newListFunc    func() runtime.Object
	pathPrefix     string // ends in "/"
	resourcePrefix string
	groupResource  schema.GroupResource
	compactor      CompactRevisioner
	leases         *leaseManager
	watchInit      func(context.Context)
	watchPageSize  int64 // page size of a watch's initial state; tests lower it
	unsafeCorrupt  bool

	// sizesMu guards sizes, the per-key size estimator that is nil until
	// EnableResourceSizeEstimation.
	sizesMu sync.RWMutex
	sizes   *sizeEstimator
}

var _ storage.Interface = (*Store)(nil)

// NewClient wraps a plain etcd client in the Kubernetes-flavoured client the
// store uses. The returned client shares the connection; closing c closes it.
func NewClient(c *clientv3.Client) *kubernetes.Client {
	kc := &kubernetes.Client{Client: c}
	kc.Kubernetes = kc
	return kc
}

// New returns a Store for one resource. It validates the options and
// starts nothing.
func New(opts Options) (*Store, error) {
	switch {
	case opts.Client == nil:
		return nil, errors.New("etcd store: Options.Client is required")
	case opts.Codec == nil:
		return nil, errors.New("etcd store: Options.Codec is required")
	case opts.NewFunc == nil || opts.NewListFunc == nil:
		return nil, errors.New("etcd store: Options.NewFunc and NewListFunc are required")
	case opts.ResourcePrefix == "" || opts.ResourcePrefix == "/":
		return nil, fmt.Errorf("etcd store: invalid ResourcePrefix %q: it names the resource, e.g. /pods", opts.ResourcePrefix)
	case !strings.HasPrefix(opts.ResourcePrefix, "/"):
		return nil, fmt.Errorf("etcd store: invalid ResourcePrefix %q: it must start with /", opts.ResourcePrefix)
	}
	// Keep upstream's normalisation: "registry", "/registry/" and
	// "/registry" all mean "/registry/".
	pathPrefix := path.Join("/", opts.Prefix)
	if !strings.HasSuffix(pathPrefix, "/") {
		pathPrefix += "/"
	}
	s := &Store{
		client:         opts.Client,
		codec:          opts.Codec,
		versioner:      opts.Versioner,
		transformer:    opts.Transformer,
		newFunc:        opts.NewFunc,
		newListFunc:    opts.NewListFunc,
		pathPrefix:     pathPrefix,
		resourcePrefix: opts.ResourcePrefix,
		groupResource:  opts.GroupResource,
		compactor:      opts.Compactor,
		leases:         newLeaseManager(opts.Client.Client, opts.Lease),
		watchInit:      opts.WatchInitialized,
		watchPageSize:  maxPageSize,
		unsafeCorrupt:  opts.UnsafeCorruptObjectDeletion,
	}
	if s.versioner == nil {
		s.versioner = storage.APIObjectVersioner{}
	}
	return s, nil
}

// Versioner implements storage.Interface.
func (s *Store) Versioner() storage.Versioner { return s.versioner }

// ReadinessCheck implements storage.Interface: the store is ready as soon
// as it exists, etcd errors surface on each call.
func (s *Store) ReadinessCheck() error { return nil }

// CompactRevision implements storage.Interface: the last compaction the
// configured compactor observed, 0 if none.
func (s *Store) CompactRevision() int64 {
	if s.compactor == nil {
		return 0
	}
	return s.compactor.CompactRevision()
}

// RequestWatchProgress implements storage.Interface. etcd sends the
// progress notification to watches whose context carries the same gRPC
// metadata, so the context is prepared as Watch prepares it.
func (s *Store) RequestWatchProgress(ctx context.Context) error {
	return s.client.RequestProgress(watchContext(ctx))
}

// GetCurrentResourceVersion implements storage.Interface: the revision of
// a linearizable read of the (always empty) resource prefix key.
func (s *Store) GetCurrentResourceVersion(ctx context.Context) (uint64, error) {
	key, err := s.prepareKey(s.resourcePrefix, false)
	if err != nil {
		return 0, err
	}
	resp, err := s.client.Kubernetes.Get(ctx, key, kubernetes.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("read current revision at %q: %w", key, err)
	}
	if resp.Revision == 0 {
		return 0, errors.New("the current resource version must be greater than 0")
	}
	return uint64(resp.Revision), nil
}

// Stats implements storage.Interface: the number of objects, and their
// estimated average size once EnableResourceSizeEstimation was called.
func (s *Store) Stats(ctx context.Context) (storage.Stats, error) {
	if sizes := s.sizeEstimator(); sizes != nil {
		return sizes.Stats(ctx)
	}
	prefix, err := s.prepareKey(s.resourcePrefix, true)
	if err != nil {
		return storage.Stats{}, err
	}
	count, err := s.client.Kubernetes.Count(ctx, prefix, kubernetes.CountOptions{})
	if err != nil {
		return storage.Stats{}, fmt.Errorf("count keys under %q: %w", prefix, err)
	}
	return storage.Stats{ObjectCount: count}, nil
}

// EnableResourceSizeEstimation implements storage.Interface: from now on
// the store remembers the size of every value it reads and Stats reports
// their average over the keys getKeys returns.
func (s *Store) EnableResourceSizeEstimation(getKeys storage.KeysFunc) error {
	if getKeys == nil {
		return errors.New("KeysFunc cannot be nil")
	}
	s.sizesMu.Lock()
	defer s.sizesMu.Unlock()
	if s.sizes != nil {
		return errors.New("resourceSizeEstimator already enabled")
	}
	s.sizes = newSizeEstimator(s.pathPrefix, getKeys)
	return nil
}

// Keys returns every key of the resource, read from etcd; it is the
// KeysFunc to give EnableResourceSizeEstimation when no cache knows them.
func (s *Store) Keys(ctx context.Context) ([]string, error) {
	prefix, err := s.prepareKey(s.resourcePrefix, true)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.KV.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, fmt.Errorf("list keys under %q: %w", prefix, err)
	}
	keys := make([]string, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		keys = append(keys, string(kv.Key))
	}
	return keys, nil
}

func (s *Store) sizeEstimator() *sizeEstimator {
	s.sizesMu.RLock()
	defer s.sizesMu.RUnlock()
	return s.sizes
}

// prepareKey checks a caller's key (storage.PrepareKey: no "..", inside the
// resource prefix) and makes it the absolute etcd key.
func (s *Store) prepareKey(key string, recursive bool) (string, error) {
	key, err := storage.PrepareKey(s.resourcePrefix, key, recursive)
	if err != nil {
		return "", err
	}
	return s.pathPrefix + strings.TrimPrefix(key, "/"), nil
}

// validateMinimumResourceVersion is the "not older than" check: a
// requested revision newer than what etcd answered at is too large.
func (s *Store) validateMinimumResourceVersion(minimum string, actual uint64) error {
	if minimum == "" {
		return nil
	}
	rv, err := s.versioner.ParseResourceVersion(minimum)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %v", err))
	}
	if rv > actual {
		return storage.NewTooLargeResourceVersionError(rv, actual, 0)
	}
	return nil
}

// watchContext makes etcd cancel the watch when it has no leader, so that
// watchers of a broken cluster see an error instead of silence.
func watchContext(ctx context.Context) context.Context {
	return clientv3.WithRequireLeader(ctx)
}
