package builtin

import "github.com/kite-project/kite/registry"

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
