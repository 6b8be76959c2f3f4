package builtin

import (
	"context"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/kite-project/kite/apis/certificates/validation"
	"github.com/kite-project/kite/registry"
)

// PluginNodeRestriction is upstream's NodeRestriction.
const PluginNodeRestriction = "NodeRestriction"

// kubeletLabels and kubeletLabelNamespaces are the labels a node may set
// on itself (k8s.io/kubelet/pkg/apis.IsKubeletLabel).
var (
	kubeletLabels = sets.New(v1.LabelHostname, v1.LabelTopologyZone, v1.LabelTopologyRegion,
		v1.LabelFailureDomainBetaZone, v1.LabelFailureDomainBetaRegion, v1.LabelInstanceType,
		v1.LabelInstanceTypeStable, v1.LabelOSStable, v1.LabelArchStable, "beta.kubernetes.io/os", "beta.kubernetes.io/arch")
	kubeletLabelNamespaces = []string{v1.LabelNamespaceSuffixKubelet, v1.LabelNamespaceSuffixNode}
)

// NodeRestrictionPlugin is upstream's NodeRestriction
// (plugin/pkg/admission/noderestriction) for what Kite serves: a node
// identity (system:node:<name> in system:nodes) may create and modify
// only its own Node (not its taints, owner references or labels outside
// the kubelet's), create only mirror pods bound to itself and owned by its
// Node, delete and evict only pods bound to it, update only their status,
// touch only its own Lease, and ask only for certificates of its own
// name. The Node authorizer lets these requests through; this plugin
// looks at their objects. stores returns a resource's Store, per request
// (pods and nodes are read; a missing Store refuses what needs it).
func NodeRestrictionPlugin(stores func(resource string) *registry.Store) registry.AdmissionPlugin {
	return registry.AdmissionPlugin{
		Name: PluginNodeRestriction,
		Admit: func(ctx context.Context, a admission.Attributes) error {
			u := a.GetUserInfo()
			if u == nil || !slices.Contains(u.GetGroups(), user.NodesGroup) || !strings.HasPrefix(u.GetName(), "system:node:") {
				return nil
			}
			node := strings.TrimPrefix(u.GetName(), "system:node:")
			if node == "" {
				return admission.NewForbidden(a, fmt.Errorf("could not determine node from user %q", u.GetName()))
			}
			nr := nodeRestriction{node: node, stores: stores}
			switch a.GetResource().GroupResource() {
			case v1.Resource("pods"):
				switch a.GetSubresource() {
				case "":
					return nr.pod(ctx, a)
				case "status":
					return nr.podStatus(a)
				case "eviction":
					return nr.podEviction(ctx, a)
				default:
					return admission.NewForbidden(a, fmt.Errorf("unexpected pod subresource %q, only 'status' and 'eviction' are allowed", a.GetSubresource()))
				}
			case v1.Resource("nodes"):
				return nr.nodeObject(a)
			case v1.Resource("persistentvolumeclaims"):
				if a.GetSubresource() != "status" {
					return admission.NewForbidden(a, fmt.Errorf("may only update PVC status"))
				}
			case coordinationv1.Resource("leases"):
				return nr.lease(a)
			case certificatesv1.Resource("certificatesigningrequests"):
				return nr.csr(a)
			}
			return nil
		},
	}
}

type nodeRestriction struct {
	node   string
	stores func(resource string) *registry.Store
}

// boundPod reads the pod a request names, for its spec.nodeName.
func (nr nodeRestriction) boundPod(ctx context.Context, a admission.Attributes, name string) (*v1.Pod, error) {
	pods := nr.stores("pods")
	if pods == nil {
		return nil, admission.NewForbidden(a, fmt.Errorf("pods cannot be read"))
	}
	obj, err := pods.Get(ctx, a.GetNamespace(), name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return obj.(*v1.Pod), nil
}

func (nr nodeRestriction) pod(ctx context.Context, a admission.Attributes) error {
	switch a.GetOperation() {
	case admission.Create:
		return nr.mirrorPod(ctx, a)
	case admission.Delete:
		pod, err := nr.boundPod(ctx, a, a.GetName())
		if err != nil {
			return err
		}
		if pod.Spec.NodeName != nr.node {
			return admission.NewForbidden(a, fmt.Errorf("node %q can only delete pods with spec.nodeName set to itself", nr.node))
		}
		return nil
	}
	return admission.NewForbidden(a, fmt.Errorf("unexpected operation %q, node %q can only create and delete mirror pods", a.GetOperation(), nr.node))
}

func (nr nodeRestriction) mirrorPod(ctx context.Context, a admission.Attributes) error {
	pod, ok := a.GetObject().(*v1.Pod)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
	}
	if _, mirror := pod.Annotations[v1.MirrorPodAnnotationKey]; !mirror {
		return admission.NewForbidden(a, fmt.Errorf("pod does not have %q annotation, node %q can only create mirror pods", v1.MirrorPodAnnotationKey, nr.node))
	}
	if pod.Spec.NodeName != nr.node {
		return admission.NewForbidden(a, fmt.Errorf("node %q can only create pods with spec.nodeName set to itself", nr.node))
	}
	switch refs := pod.OwnerReferences; {
	case len(refs) > 1:
		return admission.NewForbidden(a, fmt.Errorf("node %q can only create pods with a single owner reference set to itself", nr.node))
	case len(refs) == 0, refs[0].APIVersion != "v1" || refs[0].Kind != "Node" || refs[0].Name != nr.node:
		return admission.NewForbidden(a, fmt.Errorf("node %q can only create pods with an owner reference set to itself", nr.node))
	case refs[0].Controller == nil || !*refs[0].Controller:
		return admission.NewForbidden(a, fmt.Errorf("node %q can only create pods with a controller owner reference set to itself", nr.node))
	case refs[0].BlockOwnerDeletion != nil && *refs[0].BlockOwnerDeletion:
		return admission.NewForbidden(a, fmt.Errorf("node %q must not set blockOwnerDeletion on an owner reference", nr.node))
	}
	nodes := nr.stores("nodes")
	if nodes == nil {
		return admission.NewForbidden(a, fmt.Errorf("nodes cannot be read"))
	}
	obj, err := nodes.Get(ctx, "", nr.node, &metav1.GetOptions{})
	if err != nil {
		return err
	}
	if uid := obj.(*v1.Node).UID; pod.OwnerReferences[0].UID != uid {
		return admission.NewForbidden(a, fmt.Errorf("node %s UID mismatch: expected %s got %s", nr.node, pod.OwnerReferences[0].UID, uid))
	}
	// What a mirror pod may not name (secrets, ServiceAccounts) the
	// ServiceAccount plugin refuses, as upstream's HasAPIObjectReference.
	return nil
}

func (nr nodeRestriction) podStatus(a admission.Attributes) error {
	if a.GetOperation() != admission.Update {
		return admission.NewForbidden(a, fmt.Errorf("unexpected operation %q", a.GetOperation()))
	}
	old, ok := a.GetOldObject().(*v1.Pod)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetOldObject()))
	}
	if old.Spec.NodeName != nr.node {
		return admission.NewForbidden(a, fmt.Errorf("node %q can only update pod status for pods with spec.nodeName set to itself", nr.node))
	}
	pod, ok := a.GetObject().(*v1.Pod)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
	}
	if !labels.Equals(old.Labels, pod.Labels) {
		return admission.NewForbidden(a, fmt.Errorf("node %q cannot update labels through pod status", nr.node))
	}
	if !apiequality.Semantic.DeepEqual(old.Status.ResourceClaimStatuses, pod.Status.ResourceClaimStatuses) {
		return admission.NewForbidden(a, fmt.Errorf("node %q cannot update resource claim statues", nr.node))
	}
	return nil
}

func (nr nodeRestriction) podEviction(ctx context.Context, a admission.Attributes) error {
	if a.GetOperation() != admission.Create {
		return admission.NewForbidden(a, fmt.Errorf("unexpected operation %s", a.GetOperation()))
	}
	name := a.GetName()
	if name == "" {
		if e, ok := a.GetObject().(*policyv1.Eviction); ok {
			name = e.Name
		}
	}
	if name == "" {
		return admission.NewForbidden(a, fmt.Errorf("could not determine pod from request data"))
	}
	pod, err := nr.boundPod(ctx, a, name)
	if err != nil {
		return err
	}
	if pod.Spec.NodeName != nr.node {
		return admission.NewForbidden(a, fmt.Errorf("node %s can only evict pods with spec.nodeName set to itself", nr.node))
	}
	return nil
}

func (nr nodeRestriction) nodeObject(a admission.Attributes) error {
	name := a.GetName()
	if a.GetOperation() == admission.Create {
		if m, ok := a.GetObject().(metav1.Object); ok {
			name = m.GetName()
		}
	}
	if name != nr.node {
		return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to modify node %q", nr.node, name))
	}
	var old *v1.Node
	switch a.GetOperation() {
	case admission.Create:
	case admission.Update:
		o, ok := a.GetOldObject().(*v1.Node)
		if !ok {
			return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetOldObject()))
		}
		old = o
	default:
		return nil
	}
	n, ok := a.GetObject().(*v1.Node)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
	}
	if old == nil {
		old = &v1.Node{}
		if n.Spec.ConfigSource != nil {
			return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to create pods with a non-nil configSource", nr.node))
		}
	} else {
		if n.Spec.ConfigSource != nil && !apiequality.Semantic.DeepEqual(n.Spec.ConfigSource, old.Spec.ConfigSource) {
			return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to update configSource to a new non-nil configSource", nr.node))
		}
		if !apiequality.Semantic.DeepEqual(n.Spec.Taints, old.Spec.Taints) {
			return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to modify taints", nr.node))
		}
		if !apiequality.Semantic.DeepEqual(n.OwnerReferences, old.OwnerReferences) {
			return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to modify ownerReferences", nr.node))
		}
	}
	if forbidden := forbiddenNodeLabels(n.Labels, old.Labels); len(forbidden) > 0 {
		if a.GetOperation() == admission.Create {
			return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to set the following labels: %s", nr.node, strings.Join(forbidden, ", ")))
		}
		return admission.NewForbidden(a, fmt.Errorf("is not allowed to modify labels: %s", strings.Join(forbidden, ", ")))
	}
	return nil
}

// forbiddenNodeLabels are the labels changed between a and b that a node
// may not set: node-restriction.kubernetes.io ones, and kubernetes.io or
// k8s.io ones the kubelet does not own (upstream's getForbiddenLabels).
func forbiddenNodeLabels(a, b map[string]string) []string {
	changed := sets.New[string]()
	for k, v := range a {
		if w, ok := b[k]; !ok || v != w {
			changed.Insert(k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			changed.Insert(k)
		}
	}
	var forbidden []string
	for _, k := range sets.List(changed) {
		ns, _, found := strings.Cut(k, "/")
		if !found {
			ns = ""
		}
		under := func(domain string) bool { return ns == domain || strings.HasSuffix(ns, "."+domain) }
		if under(v1.LabelNamespaceNodeRestriction) || ((under("kubernetes.io") || under("k8s.io")) && !isKubeletLabel(k, ns)) {
			forbidden = append(forbidden, k)
		}
	}
	return forbidden
}

func isKubeletLabel(key, ns string) bool {
	if kubeletLabels.Has(key) {
		return true
	}
	for _, allowed := range kubeletLabelNamespaces {
		if ns == allowed || strings.HasSuffix(ns, "."+allowed) {
			return true
		}
	}
	return false
}

func (nr nodeRestriction) lease(a admission.Attributes) error {
	if a.GetNamespace() != v1.NamespaceNodeLease {
		return admission.NewForbidden(a, fmt.Errorf("can only access leases in the %q system namespace", v1.NamespaceNodeLease))
	}
	name := a.GetName()
	if a.GetOperation() == admission.Create {
		if l, ok := a.GetObject().(*coordinationv1.Lease); ok {
			name = l.Name
		}
	}
	if name != nr.node {
		return admission.NewForbidden(a, fmt.Errorf("can only access node lease with the same name as the requesting node"))
	}
	return nil
}

// csr: a node asks for kubelet certificates of its own name only.
func (nr nodeRestriction) csr(a admission.Attributes) error {
	if a.GetOperation() != admission.Create {
		return nil
	}
	c, ok := a.GetObject().(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
	}
	if c.Spec.SignerName != certificatesv1.KubeletServingSignerName && c.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
		return nil
	}
	req, err := validation.ParseCSR(c.Spec.Request)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("unable to parse csr: %w", err))
	}
	if req.Subject.CommonName != "system:node:"+nr.node {
		return admission.NewForbidden(a, fmt.Errorf("can only create a node CSR with CN=system:node:%s", nr.node))
	}
	return nil
}
