package authz

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/kite-project/kite/listwatch"
)

// NodeUserPrefix and NodesGroup make a node's identity, as upstream's
// nodeidentifier reads it: user system:node:<name> in group system:nodes.
const (
	NodeUserPrefix = "system:node:"
	NodesGroup     = user.NodesGroup
)

// nodeIdentity returns the node a user is, if it is one.
func nodeIdentity(u user.Info) (string, bool) {
	if u == nil || !strings.HasPrefix(u.GetName(), NodeUserPrefix) {
		return "", false
	}
	for _, g := range u.GetGroups() {
		if g == NodesGroup {
			return strings.TrimPrefix(u.GetName(), NodeUserPrefix), true
		}
	}
	return "", false
}

// Node is upstream's Node authorizer (plugin/pkg/auth/authorizer/node)
// over a simpler graph: which node each pod is bound to, and which
// secrets, configMaps, PVCs and ServiceAccount the pod refers to. A node
// may read only those of its own pods, its own Node and Lease, and for
// the rest what the system:node role's rules allow.
type Node struct {
	graph *nodeGraph
	rules []rbacv1.PolicyRule
}

// NewNode returns a Node authorizer with rules (system:node's) for what
// the graph does not decide.
func NewNode(rules []rbacv1.PolicyRule) *Node {
	return &Node{graph: newNodeGraph(), rules: rules}
}

// vertex kinds, with upstream's names in messages.
const (
	configMapVertex = "configmap"
	secretVertex    = "secret"
	pvcVertex       = "pvc"
	podVertex       = "pod"
	saVertex        = "serviceAccount"
)

var (
	secrets         = schema.GroupResource{Resource: "secrets"}
	configMaps      = schema.GroupResource{Resource: "configmaps"}
	pods            = schema.GroupResource{Resource: "pods"}
	nodes           = schema.GroupResource{Resource: "nodes"}
	pvcs            = schema.GroupResource{Resource: "persistentvolumeclaims"}
	serviceAccounts = schema.GroupResource{Resource: "serviceaccounts"}
	leases          = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
)

var _ authorizer.Authorizer = (*Node)(nil)
var _ authorizer.RuleResolver = (*Node)(nil)

// Authorize decides node identities' requests as upstream; it has no
// opinion on anyone else's.
func (n *Node) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	nodeName, isNode := nodeIdentity(attrs.GetUser())
	if !isNode {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if nodeName == "" {
		return authorizer.DecisionNoOpinion, fmt.Sprintf("unknown node for user %q", attrs.GetUser().GetName()), nil
	}
	if attrs.IsResourceRequest() {
		switch (schema.GroupResource{Group: attrs.GetAPIGroup(), Resource: attrs.GetResource()}) {
		case secrets:
			return n.readNamespaced(nodeName, secretVertex, attrs)
		case configMaps:
			return n.readNamespaced(nodeName, configMapVertex, attrs)
		case pvcs:
			if attrs.GetSubresource() == "status" {
				switch attrs.GetVerb() {
				case "update", "patch":
					return n.related(nodeName, pvcVertex, attrs)
				}
				return authorizer.DecisionNoOpinion, "can only get/update/patch this type", nil
			}
			return n.get(nodeName, pvcVertex, attrs)
		case serviceAccounts:
			return n.serviceAccount(nodeName, attrs)
		case leases:
			return lease(nodeName, attrs)
		case nodes:
			return node(nodeName, attrs)
		case pods:
			return n.pod(nodeName, attrs)
		}
	}
	if RulesAllow(attrs, n.rules...) {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// ConditionsAwareAuthorize is Authorize: the Node authorizer has no
// conditions.
func (n *Node) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(n.Authorize(ctx, attrs))
}

// EvaluateConditions is not supported, as upstream's.
func (*Node) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// RulesFor is upstream's: a node's rules cannot be listed.
func (n *Node) RulesFor(_ context.Context, u user.Info, _ string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	if _, isNode := nodeIdentity(u); isNode {
		return nil, nil, true, fmt.Errorf("node authorizer does not support user rule resolution")
	}
	return nil, nil, false, nil
}

func (n *Node) get(nodeName, kind string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if attrs.GetVerb() != "get" {
		return authorizer.DecisionNoOpinion, "can only get individual resources of this type", nil
	}
	if attrs.GetSubresource() != "" {
		return authorizer.DecisionNoOpinion, "cannot get subresource", nil
	}
	return n.related(nodeName, kind, attrs)
}

func (n *Node) readNamespaced(nodeName, kind string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	switch attrs.GetVerb() {
	case "get", "list", "watch":
	default:
		return authorizer.DecisionNoOpinion, "can only read resources of this type", nil
	}
	if attrs.GetSubresource() != "" {
		return authorizer.DecisionNoOpinion, "cannot read subresource", nil
	}
	if attrs.GetNamespace() == "" {
		return authorizer.DecisionNoOpinion, "can only read namespaced object of this type", nil
	}
	return n.related(nodeName, kind, attrs)
}

// related allows a request on an object the graph ties to the node.
func (n *Node) related(nodeName, kind string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if attrs.GetName() == "" {
		return authorizer.DecisionNoOpinion, "No Object name found", nil
	}
	if !n.graph.hasPath(nodeName, vertex{kind, attrs.GetNamespace(), attrs.GetName()}) {
		return authorizer.DecisionNoOpinion, fmt.Sprintf("no relationship found between node '%s' and this object", nodeName), nil
	}
	return authorizer.DecisionAllow, "", nil
}

func (n *Node) serviceAccount(nodeName string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if attrs.GetVerb() == "get" && attrs.GetSubresource() == "" {
		return n.readNamespaced(nodeName, saVertex, attrs)
	}
	if attrs.GetVerb() != "create" || attrs.GetName() == "" {
		return authorizer.DecisionNoOpinion, "can only create tokens for individual service accounts", nil
	}
	if attrs.GetSubresource() != "token" {
		return authorizer.DecisionNoOpinion, "can only create token subresource of serviceaccount", nil
	}
	return n.related(nodeName, saVertex, attrs)
}

func lease(nodeName string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	switch attrs.GetVerb() {
	case "get", "create", "update", "patch", "delete":
	default:
		return authorizer.DecisionNoOpinion, "can only get, create, update, patch, or delete a node lease", nil
	}
	if attrs.GetNamespace() != corev1.NamespaceNodeLease {
		return authorizer.DecisionNoOpinion, fmt.Sprintf("can only access leases in the %q system namespace", corev1.NamespaceNodeLease), nil
	}
	if attrs.GetVerb() != "create" && attrs.GetName() != nodeName {
		return authorizer.DecisionNoOpinion, "can only access node lease with the same name as the requesting node", nil
	}
	return authorizer.DecisionAllow, "", nil
}

func node(nodeName string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	switch attrs.GetSubresource() {
	case "":
		switch attrs.GetVerb() {
		case "create", "update", "patch":
			// NodeRestriction admission limits these to the node's own.
			return authorizer.DecisionAllow, "", nil
		case "get", "list", "watch":
			switch attrs.GetName() {
			case nodeName:
				return authorizer.DecisionAllow, "", nil
			case "":
				return authorizer.DecisionNoOpinion, fmt.Sprintf("node '%s' cannot read all nodes, only its own Node object", nodeName), nil
			default:
				return authorizer.DecisionNoOpinion, fmt.Sprintf("node '%s' cannot read '%s', only its own Node object", nodeName, attrs.GetName()), nil
			}
		}
	case "status":
		switch attrs.GetVerb() {
		case "update", "patch":
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func (n *Node) pod(nodeName string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	switch attrs.GetSubresource() {
	case "":
		switch attrs.GetVerb() {
		case "get":
			return n.get(nodeName, podVertex, attrs)
		case "list", "watch":
			reqs, _ := attrs.GetFieldSelector()
			for _, req := range reqs {
				if req.Field == "spec.nodeName" && (req.Operator == selection.Equals || req.Operator == selection.DoubleEquals) && req.Value == nodeName {
					return authorizer.DecisionAllow, "", nil
				}
			}
			if attrs.GetName() != "" {
				return n.related(nodeName, podVertex, attrs)
			}
			return authorizer.DecisionNoOpinion, "can only list/watch pods with spec.nodeName field selector", nil
		case "create", "delete":
			// Mirror pods; NodeRestriction admission limits them.
			return authorizer.DecisionAllow, "", nil
		}
	case "status":
		switch attrs.GetVerb() {
		case "update", "patch":
			return authorizer.DecisionAllow, "", nil
		}
	case "eviction":
		if attrs.GetVerb() == "create" {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// vertex is an object the graph knows.
type vertex struct{ kind, namespace, name string }

// nodeGraph ties objects to nodes through the pods bound to them. Each
// object counts, per node, the pods that tie it there, so that a pod's
// update or deletion unties exactly what it tied. It is a listwatch.Store
// of pods.
type nodeGraph struct {
	mu sync.RWMutex
	// pods are each bound pod's node and the vertices it ties to it.
	pods map[string]podEdges
	// edges count, per vertex and node, the pods that tie them.
	edges map[vertex]map[string]int
}

type podEdges struct {
	node     string
	vertices []vertex
}

func newNodeGraph() *nodeGraph {
	return &nodeGraph{pods: map[string]podEdges{}, edges: map[vertex]map[string]int{}}
}

func (g *nodeGraph) hasPath(nodeName string, v vertex) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.edges[v][nodeName] > 0
}

// podVertices are the pod itself and what it refers to, as upstream's
// graph_populator adds them: its ServiceAccount, the secrets of image
// pulls, volumes and environment, configMaps of volumes and environment,
// and its PVCs (ephemeral volumes' too).
func podVertices(pod *corev1.Pod) []vertex {
	ns := pod.Namespace
	vs := []vertex{{podVertex, ns, pod.Name}}
	add := func(kind, name string) {
		if name != "" {
			vs = append(vs, vertex{kind, ns, name})
		}
	}
	add(saVertex, pod.Spec.ServiceAccountName)
	for _, s := range pod.Spec.ImagePullSecrets {
		add(secretVertex, s.Name)
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.Secret != nil:
			add(secretVertex, v.Secret.SecretName)
		case v.ConfigMap != nil:
			add(configMapVertex, v.ConfigMap.Name)
		case v.PersistentVolumeClaim != nil:
			add(pvcVertex, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			add(pvcVertex, pod.Name+"-"+v.Name)
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					add(secretVertex, src.Secret.Name)
				}
				if src.ConfigMap != nil {
					add(configMapVertex, src.ConfigMap.Name)
				}
			}
		}
		for _, ref := range volumeSecretRefs(&v) {
			add(secretVertex, ref)
		}
	}
	for _, containers := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range containers {
			addEnvRefs(&containers[i].Env, containers[i].EnvFrom, add)
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		c := &pod.Spec.EphemeralContainers[i].EphemeralContainerCommon
		addEnvRefs(&c.Env, c.EnvFrom, add)
	}
	return vs
}

func addEnvRefs(env *[]corev1.EnvVar, envFrom []corev1.EnvFromSource, add func(kind, name string)) {
	for _, e := range envFrom {
		if e.SecretRef != nil {
			add(secretVertex, e.SecretRef.Name)
		}
		if e.ConfigMapRef != nil {
			add(configMapVertex, e.ConfigMapRef.Name)
		}
	}
	for _, e := range *env {
		if e.ValueFrom == nil {
			continue
		}
		if e.ValueFrom.SecretKeyRef != nil {
			add(secretVertex, e.ValueFrom.SecretKeyRef.Name)
		}
		if e.ValueFrom.ConfigMapKeyRef != nil {
			add(configMapVertex, e.ValueFrom.ConfigMapKeyRef.Name)
		}
	}
}

// volumeSecretRefs are the secrets of volume plugins that name one.
func volumeSecretRefs(v *corev1.Volume) []string {
	var out []string
	ref := func(r *corev1.LocalObjectReference) {
		if r != nil {
			out = append(out, r.Name)
		}
	}
	switch {
	case v.CSI != nil:
		ref(v.CSI.NodePublishSecretRef)
	case v.ISCSI != nil:
		ref(v.ISCSI.SecretRef)
	case v.RBD != nil:
		ref(v.RBD.SecretRef)
	case v.CephFS != nil:
		ref(v.CephFS.SecretRef)
	case v.FlexVolume != nil:
		ref(v.FlexVolume.SecretRef)
	case v.ScaleIO != nil:
		ref(v.ScaleIO.SecretRef)
	case v.StorageOS != nil:
		ref(v.StorageOS.SecretRef)
	case v.AzureFile != nil:
		out = append(out, v.AzureFile.SecretName)
	}
	return out
}

var _ listwatch.Store = (*nodeGraph)(nil)

func (g *nodeGraph) Add(obj runtime.Object) error    { return g.put(obj) }
func (g *nodeGraph) Update(obj runtime.Object) error { return g.put(obj) }

func (g *nodeGraph) put(obj runtime.Object) error {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return fmt.Errorf("node graph: %T is not a pod", obj)
	}
	key := pod.Namespace + "/" + pod.Name
	g.mu.Lock()
	defer g.mu.Unlock()
	g.removeLocked(key)
	// Upstream ties only pods that are bound and not finished.
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	e := podEdges{node: pod.Spec.NodeName, vertices: podVertices(pod)}
	g.pods[key] = e
	for _, v := range e.vertices {
		m := g.edges[v]
		if m == nil {
			m = map[string]int{}
			g.edges[v] = m
		}
		m[e.node]++
	}
	return nil
}

func (g *nodeGraph) removeLocked(key string) {
	e, ok := g.pods[key]
	if !ok {
		return
	}
	delete(g.pods, key)
	for _, v := range e.vertices {
		m := g.edges[v]
		if m[e.node]--; m[e.node] <= 0 {
			delete(m, e.node)
		}
		if len(m) == 0 {
			delete(g.edges, v)
		}
	}
}

func (g *nodeGraph) Delete(obj runtime.Object) error {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return fmt.Errorf("node graph: %T is not a pod", obj)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.removeLocked(pod.Namespace + "/" + pod.Name)
	return nil
}

func (g *nodeGraph) Replace(objs []runtime.Object, _ string) error {
	g.mu.Lock()
	g.pods = map[string]podEdges{}
	g.edges = map[vertex]map[string]int{}
	g.mu.Unlock()
	for _, o := range objs {
		if err := g.put(o); err != nil {
			return err
		}
	}
	return nil
}
