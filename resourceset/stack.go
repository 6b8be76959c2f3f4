package resourceset

import (
	"context"
	"fmt"
	"maps"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/kubernetes"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/storage"

	"github.com/kite-project/kite/apiserver"
	"github.com/kite-project/kite/apiserver/metrics"
	"github.com/kite-project/kite/apiserver/openapi"
	"github.com/kite-project/kite/registry"
	"github.com/kite-project/kite/registry/apiextensions"
	"github.com/kite-project/kite/registry/builtin"
	"github.com/kite-project/kite/registry/webhook"
	"github.com/kite-project/kite/storage/etcd"
	"github.com/kite-project/kite/storage/watchcache"
)

// Options say how the stacks are built.
type Options struct {
	// Etcd is the etcd the stacks store into. Required.
	Etcd *clientv3.Client
	// Compactor gives the compaction revisions of Etcd. Required.
	Compactor etcd.CompactRevisioner
	// Metrics, if set, times every etcd call.
	Metrics *metrics.Metrics
	// WatchCacheSizes, DisableWatchCache and WrapStorage are
	// kite.Options': how each resource is cached.
	WatchCacheSizes   *watchcache.Sizes
	DisableWatchCache bool
	WrapStorage       func(gr schema.GroupResource, store storage.Interface) (wrapped storage.Interface, stop func(), err error)
	// Admission says which admission plugins every write of every stack
	// goes through (builtin.Admission); its Namespaces is filled in here.
	Admission builtin.AdmissionConfig
	// Authentication issues and reviews tokens for serviceaccounts/token
	// and tokenreviews.
	Authentication builtin.Authentication
	// Authorizer returns the server's authorizer (admission policies'
	// CEL authorizer variable); nil allows everything.
	Authorizer func() authorizer.UnconditionalAuthorizer
	// ComponentStatuses are the components componentstatuses reports.
	ComponentStatuses map[string]builtin.ComponentCheck
}

// Builder builds a resource's storage stack from its Strategy: the
// etcd store (timed when metrics are on), then the watch cache (or the
// embedder's wrapper), then the registry Store. It is the one place a
// stack is made, for built-in resources at start and for custom
// resources while serving.
type Builder struct {
	client    *kubernetes.Client
	compactor etcd.CompactRevisioner
	opts      Options
	metrics   *metrics.Metrics // nil: etcd calls are not timed
	fields    *registry.FieldManagers
	admission registry.Admission
	// peers finds another served store (registry.Options.Peers).
	peers func(groupResource string) *registry.Store
	// protobuf encodes built-in kinds as kube-apiserver stores them.
	protobuf runtime.Serializer
	scheme   *runtime.Scheme
}

// Stack is one resource's storage, from the registry Store down to the
// etcd store, and what stops it.
type Stack struct {
	Store *registry.Store
	// OpenAPI describes the resource to the OpenAPI documents.
	OpenAPI openapi.Resource
	// Etcd is the bottom of the stack (objects counted for metrics); nil
	// for a virtual resource or one stored with another.
	Etcd storage.Interface
	// Stop ends the stack's goroutines (its watch cache's) and returns
	// when they have; open watches on it end. Never nil.
	Stop func()
}

// StackOptions say how one stack differs from the built-in default.
type StackOptions struct {
	// Codec encodes values in etcd; nil means protobuf in the strategy's
	// version, as kube-apiserver stores built-in kinds.
	Codec runtime.Codec
	// StoredWith is the storage of the resource that holds this one's
	// objects (Strategy.StoredWith), which the stack converts through.
	StoredWith storage.Interface
	// OpenAPI describes the resource; nil means from its Go types.
	OpenAPI *openapi.Resource
	// Uncached builds the stack without a watch cache, for a store used
	// once and stopped (the instances of a CRD that serves no version).
	Uncached bool
}

// FieldManagers are the field managers of every stack built.
func (b *Builder) FieldManagers() *registry.FieldManagers { return b.fields }

// Build makes and starts the stack of strat. The stack runs until its
// Stop is called (or ctx ends).
func (b *Builder) Build(ctx context.Context, strat *registry.Strategy, so StackOptions) (*Stack, error) {
	gr := strat.GroupResource()
	noStop := func() {}
	switch {
	case !strat.Stored():
		opts := registry.Options{Strategy: strat, Peers: b.peers}
		if strat.CreateVia != "" {
			// Admission sees the alias's own create (registry's createVia).
			opts.Admission = b.admission
		}
		store, err := registry.New(opts)
		if err != nil {
			return nil, err
		}
		return &Stack{Store: store, OpenAPI: Describe(strat), Stop: noStop}, nil
	case strat.Conversion != nil:
		if so.StoredWith == nil {
			return nil, fmt.Errorf("%s is stored with %s, which has no storage", gr, strat.StoredWith)
		}
		store, err := registry.New(registry.Options{Strategy: strat, FieldManagers: b.fields, Admission: b.admission,
			Storage: registry.ConvertingStorage(so.StoredWith, *strat.Conversion, strat.GetAttrs)})
		if err != nil {
			return nil, err
		}
		describe := Describe(strat)
		if so.OpenAPI != nil {
			describe = *so.OpenAPI
		}
		return &Stack{Store: store, OpenAPI: describe, Stop: noStop}, nil
	}
	codec := so.Codec
	if codec == nil {
		codec = runtime.NewCodec(runtime.WithVersionEncoder{Version: strat.Kind.GroupVersion(), Encoder: b.protobuf, ObjectTyper: b.scheme}, b.protobuf)
	}
	bottom, err := etcd.New(etcd.Options{
		Client:         b.client,
		Codec:          codec,
		NewFunc:        strat.New,
		NewListFunc:    strat.NewList,
		Prefix:         "/registry",
		ResourcePrefix: "/" + strat.KeyPrefix(),
		GroupResource:  gr,
		Compactor:      b.compactor,
	})
	if err != nil {
		return nil, fmt.Errorf("etcd store for %s: %w", gr, err)
	}
	var st storage.Interface = bottom
	if b.metrics != nil {
		st = etcd.Instrument(st, gr, b.metrics)
	}
	stop := noStop
	maxEvents, cached := watchcache.DefaultMaxEvents, gr.Resource != "events"
	if sz := b.opts.WatchCacheSizes; sz != nil {
		// Events stay uncached unless named, as upstream's default
		// sizes say "events#0".
		if _, named := sz.PerResource[gr]; named || cached {
			maxEvents, cached = sz.For(gr)
		}
	}
	switch {
	case b.opts.WrapStorage == nil && !b.opts.DisableWatchCache && cached && !so.Uncached:
		// Events are written often and read rarely: upstream keeps them
		// out of the watch cache too (unless a size is given).
		c, err := watchcache.New(watchcache.Options{
			MaxEvents:      maxEvents,
			Store:          st,
			ResourcePrefix: "/" + strat.KeyPrefix(),
			GroupResource:  gr,
			KeyFunc:        strat.KeyFunc(),
			NewFunc:        strat.New,
			NewListFunc:    strat.NewList,
			AttrFunc:       strat.GetAttrs,
			Indexers:       strat.Indexers(),
			Intern:         strat.Intern,
		})
		if err != nil {
			return nil, fmt.Errorf("watch cache of %s: %w", gr, err)
		}
		c.Start(ctx)
		st, stop = c, c.Stop
	case b.opts.WrapStorage != nil:
		wrapped, wstop, err := b.opts.WrapStorage(gr, st)
		if err != nil {
			return nil, fmt.Errorf("wrap storage of %s: %w", gr, err)
		}
		st = wrapped
		if wstop != nil {
			stop = wstop
		}
	}
	store, err := registry.New(registry.Options{Strategy: strat, Storage: st, FieldManagers: b.fields, Admission: b.admission, Peers: b.peers})
	if err != nil {
		stop()
		return nil, err
	}
	describe := Describe(strat)
	if so.OpenAPI != nil {
		describe = *so.OpenAPI
	}
	return &Stack{Store: store, OpenAPI: describe, Etcd: bottom, Stop: stop}, nil
}

// New builds and starts the stacks of the built-in resources and returns
// the set that serves them, which custom resources join while serving.
// Values are protobuf with the "k8s\x00" prefix, as kube-apiserver writes
// them, under /registry. The stacks run until StopAll (or ctx ends).
func New(ctx context.Context, opts Options) (_ *Set, err error) {
	scheme, err := apiserver.NewScheme()
	if err != nil {
		return nil, err
	}
	var namespaces, serviceAccounts *registry.Store
	var set *Set
	ac := opts.Admission
	ac.Namespaces = func() *registry.Store { return namespaces }
	ac.ServiceAccounts = func() *registry.Store { return serviceAccounts }
	ac.Stores = func(gr string) *registry.Store {
		if set == nil {
			return nil
		}
		return set.Store(gr)
	}
	// Webhooks read their configurations, namespaces and services from
	// the set's own stores, once it serves them.
	hooks, err := webhook.New(webhook.Options{Stores: func(gr string) *registry.Store {
		if set == nil {
			return nil
		}
		return set.Store(gr)
	}, Equivalents: func(gvr schema.GroupVersionResource, subresource string) []webhook.Equivalent {
		if set == nil {
			return nil
		}
		return set.Equivalents(gvr, subresource)
	}})
	if err != nil {
		return nil, err
	}
	ac.Plugins = map[string]registry.AdmissionPlugin{
		"MutatingAdmissionWebhook":   hooks.MutatingPlugin(),
		"ValidatingAdmissionWebhook": hooks.ValidatingPlugin(),
	}
	maps.Copy(ac.Plugins, admissionPolicies(func() *Set { return set }, scheme, opts.Authorizer, opts.Metrics))
	maps.Copy(ac.Plugins, builtin.StorageAdmissionPlugins(func(gr string) *registry.Store { return set.Store(gr) }))
	for name, p := range opts.Admission.Plugins {
		ac.Plugins[name] = p
	}
	chain, err := builtin.Admission(ac)
	if err != nil {
		return nil, err
	}
	b := &Builder{
		client:    etcd.NewClient(opts.Etcd),
		compactor: opts.Compactor,
		opts:      opts,
		fields:    registry.NewFieldManagers(scheme),
		admission: chain,
		protobuf:  protobuf.NewSerializer(scheme, scheme),
		scheme:    scheme,
		metrics:   opts.Metrics,
	}
	set = &Set{build: b}
	b.peers = set.Store
	defer func() {
		if err != nil {
			set.StopAll()
		}
	}()
	built := map[schema.GroupResource]*Stack{}
	for _, strat := range append(builtin.All(time.Now, builtin.WithAuthentication(opts.Authentication), builtin.WithComponentStatuses(opts.ComponentStatuses)), apiextensions.Strategy(time.Now)) {
		var so StackOptions
		if strat.Conversion != nil {
			if inner := built[strat.StoredWith]; inner != nil {
				// Through the other resource's whole stack, so that
				// its reads and writes are timed and cached as its own.
				so.StoredWith = inner.Store.Storage()
			}
		}
		st, err := b.Build(ctx, strat, so)
		if err != nil {
			return nil, err
		}
		built[strat.GroupResource()] = st
		if err := set.Add(st); err != nil {
			st.Stop()
			return nil, err
		}
	}
	namespaces = set.Store("namespaces")
	serviceAccounts = set.Store("serviceaccounts")
	return set, nil
}
