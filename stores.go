package kite

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apiserver/pkg/storage"

	"github.com/kite-project/kite/apiserver"
	"github.com/kite-project/kite/registry"
	"github.com/kite-project/kite/registry/builtin"
	"github.com/kite-project/kite/storage/etcd"
	"github.com/kite-project/kite/storage/watchcache"
)

// buildStores makes one etcd store and one registry Store per resource.
// Values are protobuf with the "k8s\x00" prefix, as kube-apiserver writes
// them, under /registry.
func (s *Server) buildStores(ctx context.Context, opts Options) ([]*registry.Store, error) {
	scheme, err := apiserver.NewScheme()
	if err != nil {
		return nil, err
	}
	s.scheme = scheme
	client := etcd.NewClient(s.etcd.Client())
	compactor := opts.Compactor
	if compactor == nil {
		compactor = etcd.NewCompactor(etcd.CompactorOptions{Client: s.etcd.Client(), Interval: opts.EtcdCompactionInterval})
		s.wg.Go(func() { compactor.Run(ctx) })
	}
	pb := protobuf.NewSerializer(scheme, scheme)
	fields := registry.NewFieldManagers(scheme)
	s.stores = map[string]*registry.Store{}
	var stores []*registry.Store
	var namespaces *registry.Store
	admit := func(ctx context.Context, gr schema.GroupResource, namespace, name string) error {
		return builtin.NamespaceLifecycle(namespaces)(ctx, gr, namespace, name)
	}
	etcdStores := map[schema.GroupResource]storage.Interface{}
	for _, strat := range builtin.All(time.Now) {
		gr := strat.GroupResource()
		if strat.Virtual != nil {
			store, err := registry.New(registry.Options{Strategy: strat})
			if err != nil {
				return nil, err
			}
			s.stores[gr.String()] = store
			stores = append(stores, store)
			continue
		}
		if strat.Conversion != nil {
			inner, ok := etcdStores[strat.StoredWith]
			if !ok {
				return nil, fmt.Errorf("%s is stored with %s, which has no storage", gr, strat.StoredWith)
			}
			store, err := registry.New(registry.Options{Strategy: strat, FieldManagers: fields, Admit: admit,
				Storage: registry.ConvertingStorage(inner, *strat.Conversion, strat.GetAttrs)})
			if err != nil {
				return nil, err
			}
			s.stores[gr.String()] = store
			stores = append(stores, store)
			continue
		}
		codec := runtime.NewCodec(runtime.WithVersionEncoder{Version: strat.Kind.GroupVersion(), Encoder: pb, ObjectTyper: scheme}, pb)
		var st storage.Interface
		st, err := etcd.New(etcd.Options{
			Client:         client,
			Codec:          codec,
			NewFunc:        strat.New,
			NewListFunc:    strat.NewList,
			Prefix:         "/registry",
			ResourcePrefix: "/" + strat.KeyPrefix(),
			GroupResource:  gr,
			Compactor:      compactor,
		})
		if err != nil {
			return nil, fmt.Errorf("etcd store for %s: %w", gr, err)
		}
		etcdStores[gr] = st
		if s.metrics != nil {
			st = &instrumented{Interface: st, m: s.metrics, gr: gr}
		}
		maxEvents, cached := watchcache.DefaultMaxEvents, gr.Resource != "events"
		if sz := opts.WatchCacheSizes; sz != nil {
			// Events stay uncached unless named, as upstream's default
			// sizes say "events#0".
			if _, named := sz.PerResource[gr]; named || cached {
				maxEvents, cached = sz.For(gr)
			}
		}
		switch {
		case opts.WrapStorage == nil && !opts.DisableWatchCache && cached:
			// Events are written often and read rarely: upstream keeps
			// them out of the watch cache too (unless a size is given).
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
			s.stops = append(s.stops, c.Stop)
			st = c
		case opts.WrapStorage != nil:
			wrapped, stop, err := opts.WrapStorage(gr, st)
			if err != nil {
				return nil, fmt.Errorf("wrap storage of %s: %w", gr, err)
			}
			st = wrapped
			if stop != nil {
				s.stops = append(s.stops, stop)
			}
		}
		ro := registry.Options{Strategy: strat, Storage: st, FieldManagers: fields}
		if strat.Namespaced {
			ro.Admit = admit
		}
		store, err := registry.New(ro)
		if err != nil {
			return nil, err
		}
		if gr.Resource == "namespaces" && gr.Group == "" {
			namespaces = store
		}
		s.stores[gr.String()] = store
		stores = append(stores, store)
	}
	if s.metrics != nil {
		s.wg.Go(func() { countObjects(ctx, s.metrics, etcdStores, time.Minute) })
	}
	return stores, nil
}
