// Package staticpod turns the bytes of a static pod manifest (a file or a URL
// body) into the pods the agent runs, as upstream's pkg/kubelet/config
// common.go does: decode YAML or JSON, apply the API server's defaults
// (apis/core/defaults), apply the static pod defaults, and validate as the
// API server does on create (apis/core/validation) plus the static pod rule
// that a pod may not refer to API objects (secrets, configmaps, service
// accounts, claims).
//
// Defaulting (ApplyDefaults) follows upstream: name "<name>-<node>" (node
// lowercased), namespace "default" when empty, spec.nodeName set to the node,
// UID and the kubernetes.io/config.hash annotation from a hash, phase
// Pending, and for files a NoExecute toleration so that taint-based eviction
// never evicts a static pod.
//
// The hash differs from upstream on purpose (upstream users complain that an
// agent upgrade restarts their static pods, kubernetes/kubernetes#115156): it
// covers the manifest's content as decoded and re-encoded, before any
// defaulting, plus the source, its location (path or URL) and the node, and is
// prefixed by a scheme version. So reformatting a manifest, or an agent that
// defaults more fields, does not change a pod's UID; any change of content,
// location or node does, and gives a new pod. A manifest that sets
// metadata.uid keeps that UID, and its edits are UPDATEs.
package staticpod
