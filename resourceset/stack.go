package kite

import (
	"context"
	"fmt"
	"time"

	"go.etcd.io/etcd/client/v3/kubernetes"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apiserver/pkg/storage"

	"github.com/kite-project/kite/apiserver"
	"github.com/kite-project/kite/apiserver/metrics"
	"github.com/kite-project/kite/apiserver/openapi"
	"github.com/kite-project/kite/registry"
	"github.com/kite-project/kite/registry/apiextensions"
	"github.com/kite-project/kite/registry/builtin"
	"github.com/kite-project/kite/storage/etcd"
	"github.com/kite-project/kite/storage/watchcache"
)

// stackBuilder builds a resource's storage stack from its Strategy: the
// etcd store (timed when metrics are on), then the watch cache (or the
// embedder's wrapper), then the registry Store. It is the one place a
// stack is made, for built-in resources at start and for custom
// resources while serving.
type stackBuilder struct {
	client    *kubernetes.Client
	compactor etcd.CompactRevisioner
	opts      Options
	metrics   *metrics.Metrics // nil: etcd calls are not timed
	fields    *registry.FieldManagers
	admit     func(ctx context.Context, gr schema.GroupResource, namespace, name string) error
	// protobuf encodes built-in kinds as kube-apiserver stores them.
	protobuf runtime.Serializer
	scheme   *runtime.Scheme
}

// stack is one resource's storage, from the registry Store down to the
// etcd store, and what stops it.
type stack struct {
	store *registry.Store
	// openapi describes the resource to the OpenAPI documents.
	openapi openapi.Resource
	// etcd is the bottom of the stack (objects counted for metrics); nil
	// for a virtual resource or one stored with another.
	etcd storage.Interface
	// stop ends the stack's goroutines (its watch cache's) and returns
	// when they have; open watches on it end. Never nil.
	stop func()
}

// stackOptions say how one stack differs from the built-in default.
type stackOptions struct {
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

// build makes and starts the stack of strat. The stack runs until its
// stop is called (or ctx ends).
func (b *stackBuilder) build(ctx context.Context, strat *registry.Strategy, so stackOptions) (*stack, error) {
	gr := strat.GroupResource()
	noStop := func() {}
	switch {
	case strat.Virtual != nil:
		store, err := registry.New(registry.Options{Strategy: strat})
		if err != nil {
			return nil, err
		}
		return &stack{store: store, openapi: openAPIResource(strat), stop: noStop}, nil
	case strat.Conversion != nil:
		if so.StoredWith == nil {
			return nil, fmt.Errorf("%s is stored with %s, which has no storage", gr, strat.StoredWith)
		}
		store, err := registry.New(registry.Options{Strategy: strat, FieldManagers: b.fields, Admit: b.admit,
			Storage: registry.ConvertingStorage(so.StoredWith, *strat.Conversion, strat.GetAttrs)})
		if err != nil {
			return nil, err
		}
		return &stack{store: store, openapi: openAPIResource(strat), stop: noStop}, nil
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
		st = &instrumented{Interface: st, m: b.metrics, gr: gr}
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
	ro := registry.Options{Strategy: strat, Storage: st, FieldManagers: b.fields}
	if strat.Namespaced {
		ro.Admit = b.admit
	}
	store, err := registry.New(ro)
	if err != nil {
		stop()
		return nil, err
	}
	describe := openAPIResource(strat)
	if so.OpenAPI != nil {
		describe = *so.OpenAPI
	}
	return &stack{store: store, openapi: describe, etcd: bottom, stop: stop}, nil
}

// buildStores makes the stacks of the built-in resources and what
// installs custom resources' stacks while serving as the CRDs say.
// Values are protobuf with the "k8s\x00" prefix, as kube-apiserver writes
// them, under /registry.
func (s *Server) buildStores(ctx context.Context, opts Options) error {
	scheme, err := apiserver.NewScheme()
	if err != nil {
		return err
	}
	s.scheme = scheme
	compactor := opts.Compactor
	if compactor == nil {
		compactor = etcd.NewCompactor(etcd.CompactorOptions{Client: s.etcd.Client(), Interval: opts.EtcdCompactionInterval})
		s.wg.Go(func() { compactor.Run(ctx) })
	}
	var namespaces *registry.Store
	b := &stackBuilder{
		client:    etcd.NewClient(s.etcd.Client()),
		compactor: compactor,
		opts:      opts,
		fields:    registry.NewFieldManagers(scheme),
		admit: func(ctx context.Context, gr schema.GroupResource, namespace, name string) error {
			return builtin.NamespaceLifecycle(namespaces)(ctx, gr, namespace, name)
		},
		protobuf: protobuf.NewSerializer(scheme, scheme),
		scheme:   scheme,
		metrics:  s.metrics,
	}
	s.resources = newResourceSet(b)
	built := map[schema.GroupResource]*stack{}
	for _, strat := range append(builtin.All(time.Now), apiextensions.Strategy(time.Now)) {
		var so stackOptions
		if strat.Conversion != nil {
			if inner := built[strat.StoredWith]; inner != nil {
				// Through the other resource's whole stack, so that
				// its reads and writes are timed and cached as its own.
				so.StoredWith = inner.store.Storage()
			}
		}
		st, err := b.build(ctx, strat, so)
		if err != nil {
			return err
		}
		built[strat.GroupResource()] = st
		if err := s.resources.add(st); err != nil {
			st.stop()
			return err
		}
	}
	namespaces = s.resources.store("namespaces")
	if s.metrics != nil {
		s.wg.Go(func() { countObjects(ctx, s.metrics, s.resources.etcdStores, time.Minute) })
	}
	s.crdInstaller = &crdInstaller{ctx: ctx, resources: s.resources, served: map[string]*servedCRD{}}
	s.crdFollower, err = newCRDFollower(s.resources.store("customresourcedefinitions.apiextensions.k8s.io"), s.crdInstaller)
	return err
}
