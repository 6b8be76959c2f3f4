package builtin

import (
	"context"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/kite-project/kite/apis/core/defaults"
	"github.com/kite-project/kite/registry"
)

// The names of the admission plugins Kite runs itself, as kube-apiserver
// names them (--enable-admission-plugins).
const (
	PluginNamespaceLifecycle       = "NamespaceLifecycle"
	PluginDefaultTolerationSeconds = "DefaultTolerationSeconds"
)

// AdmissionPluginOrder is kube-apiserver 1.37's AllOrderedPlugins: the
// order plugins run in whatever order the flags name them, and the names
// --enable-admission-plugins and --disable-admission-plugins accept.
var AdmissionPluginOrder = []string{
	"AlwaysAdmit", "NamespaceAutoProvision", PluginNamespaceLifecycle, "NamespaceExists",
	"LimitPodHardAntiAffinityTopology", PluginLimitRanger, PluginServiceAccount, "NodeRestriction",
	"TaintNodesByCondition", "AlwaysPullImages", "ImagePolicyWebhook", PluginPodSecurity,
	"PodNodeSelector", PluginPriority, PluginDefaultTolerationSeconds, "PodTolerationRestriction",
	"EventRateLimit", "ExtendedResourceToleration", "DefaultStorageClass",
	"StorageObjectInUseProtection", "OwnerReferencesPermissionEnforcement",
	"PersistentVolumeClaimResize", PluginRuntimeClass, "CertificateApproval", "CertificateSigning",
	"ClusterTrustBundleAttest", "CertificateSubjectRestriction", "DefaultIngressClass",
	"DenyServiceExternalIPs", "PodTopologyLabels",
	"MutatingAdmissionPolicy", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy",
	"ValidatingAdmissionWebhook", PluginResourceQuota, "AlwaysDeny",
}

// DefaultAdmissionPlugins are the plugins kube-apiserver 1.37 enables
// when the flags do not say otherwise (its DefaultOffAdmissionPlugins'
// complement), and NodeRestriction, which kubeadm enables: Kite's nodes
// join with their own identities.
var DefaultAdmissionPlugins = []string{
	PluginNamespaceLifecycle, PluginLimitRanger, PluginServiceAccount, PluginNodeRestriction, "TaintNodesByCondition",
	PluginPodSecurity, PluginPriority, PluginDefaultTolerationSeconds, "DefaultStorageClass",
	"StorageObjectInUseProtection", "PersistentVolumeClaimResize", PluginRuntimeClass,
	"CertificateApproval", "CertificateSigning", "ClusterTrustBundleAttest",
	"CertificateSubjectRestriction", "DefaultIngressClass", "PodTopologyLabels",
	"MutatingAdmissionPolicy", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy",
	"ValidatingAdmissionWebhook", PluginResourceQuota,
}

// AdmissionConfig says which admission plugins run and gives them what
// they read.
type AdmissionConfig struct {
	// Enable and Disable are --enable-admission-plugins and
	// --disable-admission-plugins: names of AdmissionPluginOrder added to
	// or taken from DefaultAdmissionPlugins. A name in both is an error,
	// as upstream.
	Enable, Disable []string
	// Namespaces returns the namespaces' Store (NamespaceLifecycle reads
	// it); it is called per request, so it may be filled in after the
	// chain is built.
	Namespaces func() *registry.Store
	// ServiceAccounts returns the ServiceAccounts' Store (the
	// ServiceAccount plugin reads it), called per request like
	// Namespaces. Without it the plugin does not run.
	ServiceAccounts func() *registry.Store
	// Stores returns the served Store of a group resource
	// ("limitranges", "priorityclasses.scheduling.k8s.io") or nil, called
	// per request like Namespaces: LimitRanger, ResourceQuota, Priority,
	// RuntimeClass, PodSecurity and NodeRestriction read it. Without it they do not run.
	Stores func(groupResource string) *registry.Store
	// Plugins are plugins built elsewhere (webhooks, policies), by their
	// upstream name; they run at their place in AdmissionPluginOrder when
	// enabled.
	Plugins map[string]registry.AdmissionPlugin
}

// EnabledAdmissionPlugins returns the plugins enable and disable leave
// on, in the order they run, or an error naming an unknown plugin.
func EnabledAdmissionPlugins(enable, disable []string) ([]string, error) {
	for _, n := range slices.Concat(enable, disable) {
		if !slices.Contains(AdmissionPluginOrder, n) {
			return nil, fmt.Errorf("admission plugin %q is unknown", n)
		}
	}
	for _, n := range enable {
		if slices.Contains(disable, n) {
			return nil, fmt.Errorf("%s in --enable-admission-plugins and --disable-admission-plugins: they must not overlap", n)
		}
	}
	var on []string
	for _, n := range AdmissionPluginOrder {
		if (slices.Contains(DefaultAdmissionPlugins, n) || slices.Contains(enable, n)) && !slices.Contains(disable, n) {
			on = append(on, n)
		}
	}
	return on, nil
}

// Admission returns the admission chain cfg asks for. Plugins Kite does
// not implement (yet) are accepted by name and do nothing: a flag line
// written for kube-apiserver (kubeadm's NodeRestriction) still starts.
func Admission(cfg AdmissionConfig) (registry.Chain, error) {
	on, err := EnabledAdmissionPlugins(cfg.Enable, cfg.Disable)
	if err != nil {
		return nil, err
	}
	var chain registry.Chain
	for _, name := range on {
		switch p, ok := cfg.Plugins[name]; {
		case ok:
			p.Name = name
			chain = append(chain, p)
		case name == PluginNamespaceLifecycle && cfg.Namespaces != nil:
			chain = append(chain, NamespaceLifecyclePlugin(cfg.Namespaces))
		case name == PluginServiceAccount && cfg.ServiceAccounts != nil:
			chain = append(chain, ServiceAccountPlugin(cfg.ServiceAccounts))
		case cfg.Stores != nil && builtinStorePlugin(name):
			chain = append(chain, storePlugin(name, cfg.Stores))
		case name == PluginNodeRestriction && cfg.Stores != nil:
			chain = append(chain, NodeRestrictionPlugin(cfg.Stores))
		case isCertificatesPlugin(name):
			chain = append(chain, certificatesPlugin(name))
		case name == PluginDefaultTolerationSeconds:
			chain = append(chain, DefaultTolerationSecondsPlugin())
		case name == "AlwaysDeny":
			chain = append(chain, registry.AdmissionPlugin{Name: name,
				Admit: func(_ context.Context, a admission.Attributes) error {
					return admission.NewForbidden(a, fmt.Errorf("admission control is denying all modifications"))
				}})
		}
	}
	return chain, nil
}

// NamespaceLifecyclePlugin is upstream's NamespaceLifecycle: an object is
// created only in a namespace that exists and is not terminating. The
// immortal namespaces' deletion is refused by the namespaces' strategy
// (MarkForDeletion), and upstream's check of updates in a missing
// namespace is left out: such objects cannot be there.
func NamespaceLifecyclePlugin(namespaces func() *registry.Store) registry.AdmissionPlugin {
	return registry.AdmissionPlugin{
		Name:    PluginNamespaceLifecycle,
		Handles: func(op admission.Operation) bool { return op == admission.Create },
		Admit: func(ctx context.Context, a admission.Attributes) error {
			if a.GetNamespace() == "" || a.GetKind().GroupKind() == v1.SchemeGroupVersion.WithKind("Namespace").GroupKind() {
				return nil
			}
			// Access reviews say nothing about the namespace, as upstream.
			if a.GetResource().Group == "authorization.k8s.io" && strings.HasSuffix(a.GetResource().Resource, "accessreviews") {
				return nil
			}
			// A consistent read: a namespace created or deleted just
			// before is seen as it is (upstream's plugin reads an
			// informer and can let a create into a namespace that has
			// just begun terminating).
			obj, err := namespaces().Get(ctx, "", a.GetNamespace(), &metav1.GetOptions{})
			if err != nil {
				return err
			}
			ns := obj.(*v1.Namespace)
			if ns.Status.Phase != v1.NamespaceTerminating && ns.DeletionTimestamp == nil {
				return nil
			}
			name := a.GetName()
			if name == "" && a.GetObject() != nil {
				if m, err := meta.Accessor(a.GetObject()); err == nil {
					name = m.GetName()
				}
			}
			ferr := apierrors.NewForbidden(a.GetResource().GroupResource(), name, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", a.GetNamespace()))
			ferr.ErrStatus.Details.Causes = append(ferr.ErrStatus.Details.Causes, metav1.StatusCause{
				Type:    v1.NamespaceTerminatingCause,
				Message: fmt.Sprintf("namespace %s is being terminated", a.GetNamespace()),
				Field:   "metadata.namespace",
			})
			return ferr
		},
	}
}

// DefaultTolerationSecondsPlugin is upstream's DefaultTolerationSeconds:
// a pod that does not tolerate the not-ready and unreachable taints
// tolerates them for 300 s.
func DefaultTolerationSecondsPlugin() registry.AdmissionPlugin {
	return registry.AdmissionPlugin{
		Name:    PluginDefaultTolerationSeconds,
		Handles: func(op admission.Operation) bool { return op == admission.Create || op == admission.Update },
		Admit: func(_ context.Context, a admission.Attributes) error {
			if a.GetResource().GroupResource() != v1.Resource("pods") || a.GetSubresource() != "" {
				return nil
			}
			pod, ok := a.GetObject().(*v1.Pod)
			if !ok {
				return apierrors.NewBadRequest("resource was marked with kind Pod but was unable to be converted")
			}
			defaults.TolerationSeconds(pod, defaults.DefaultTolerationSeconds)
			return nil
		},
	}
}
