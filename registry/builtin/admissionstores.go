package builtin

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kite-project/kite/registry"
)

// builtinStorePlugin says whether name is one of the plugins that read
// other resources' Stores (AdmissionConfig.Stores).
func builtinStorePlugin(name string) bool {
	switch name {
	case PluginLimitRanger, PluginPriority, PluginRuntimeClass, PluginResourceQuota, PluginPodSecurity:
		return true
	}
	return false
}

// storePlugin builds the plugin name over stores.
func storePlugin(name string, stores func(groupResource string) *registry.Store) registry.AdmissionPlugin {
	of := func(gr string) func() *registry.Store { return func() *registry.Store { return stores(gr) } }
	switch name {
	case PluginLimitRanger:
		return LimitRangerPlugin(of("limitranges"))
	case PluginPriority:
		return PriorityPlugin(of(priorityClassesResource))
	case PluginRuntimeClass:
		return RuntimeClassPlugin(of(runtimeClassesResource))
	case PluginResourceQuota:
		return ResourceQuotaPlugin(stores)
	case PluginPodSecurity:
		return PodSecurityPlugin(stores)
	}
	return registry.AdmissionPlugin{Name: name}
}

// cachedGet reads an object as upstream's plugins read their informers:
// from the watch cache as it is (resourceVersion "0"), then, when the
// cache has not heard of it, from storage (upstream's live lookup), so
// an object created a moment ago is found.
func cachedGet(ctx context.Context, store *registry.Store, namespace, name string) (runtime.Object, error) {
	obj, err := store.Get(ctx, namespace, name, &metav1.GetOptions{ResourceVersion: "0"})
	if apierrors.IsNotFound(err) {
		return store.Get(ctx, namespace, name, &metav1.GetOptions{})
	}
	return obj, err
}

// cachedList lists a namespace's objects from the watch cache as it is,
// as upstream's plugins list their informers: a consistent list would
// cost every pod create a round trip to etcd per plugin.
func cachedList(ctx context.Context, store *registry.Store, namespace string) (runtime.Object, error) {
	return store.List(ctx, namespace, &metainternalversion.ListOptions{ResourceVersion: "0"})
}
