// Package defaults fills in the fields of core/v1 objects that
// kube-apiserver fills in when an object is created or updated, so that
// `kubectl get -o yaml` shows the same object on Kite as on a real cluster.
//
// It follows kubernetes/kubernetes pkg/apis/core/v1/defaults.go and the
// generated zz_generated.defaults.go that walks every nested field, written
// directly on the k8s.io/api/core/v1 types (Kite has no internal API
// version). Because of that, a few things upstream does in the v1<->internal
// conversion and that users see are done here too, each marked as such: the
// deprecated spec.serviceAccount mirror, status.podIP/podIPs,
// status.hostIP/hostIPs, node spec.podCIDR/podCIDRs and secret stringData.
//
// What is NOT defaulting and therefore not here: values set by admission
// plugins (priority, preemptionPolicy, serviceAccountName "default" and its
// token volume, the default tolerations for not-ready and unreachable
// nodes) and values a registry strategy sets on create (pod status phase
// Pending and QOS class, namespace phase and `kubernetes` finalizer, service
// cluster IPs and IP families). Helpers cover the parts of upstream's
// strategies that the registry and the node agent both need: PodQOSClass,
// NamespaceForCreate and NormalizeServiceClusterIPs.
//
// Core events and leases have no defaults upstream, so none here.
//
// Every function is idempotent: defaulting an already defaulted object
// changes nothing, which the registry relies on when it defaults on update.
package defaults
