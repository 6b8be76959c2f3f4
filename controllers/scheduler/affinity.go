package scheduler

import v1 "k8s.io/api/core/v1"

// MatchesNodeAffinity is the NodeAffinity filter alone: the pod's
// nodeSelector and one of its required node affinity terms match the
// node. The DaemonSet controller decides with it which nodes need a pod,
// as upstream's does with the same plugin.
func MatchesNodeAffinity(pod *v1.Pod, node *v1.Node) bool { return matchesNodeSelector(pod, node) }
