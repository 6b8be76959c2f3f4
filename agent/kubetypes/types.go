// Package kubetypes holds the vocabulary that the node agent's pod sources,
// their merge (package config) and the sync loop share: PodUpdate and its
// operations, the source names, the annotations the agent sets on pods, and
// the Problem hook through which sources report input they could not use.
//
// It mirrors upstream's pkg/kubelet/types so that the names are familiar.
package kubetypes

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// Op is what a PodUpdate asks for or reports.
type Op int

const (
	// SET is the complete set of pods of one source. Sources send only SETs.
	SET Op = iota
	// ADD: pods new to the agent (or, when empty, the first report of a source).
	ADD
	// DELETE: pods whose deletionTimestamp was set: terminate them gracefully.
	DELETE
	// REMOVE: pods gone from their source: stop them.
	REMOVE
	// UPDATE: pods whose spec, labels, non-agent annotations or deletion
	// grace period changed.
	UPDATE
	// RECONCILE: pods of which only the status changed.
	RECONCILE
)

// String returns the upstream spelling of the operation.
func (o Op) String() string {
	switch o {
	case SET:
		return "SET"
	case ADD:
		return "ADD"
	case DELETE:
		return "DELETE"
	case REMOVE:
		return "REMOVE"
	case UPDATE:
		return "UPDATE"
	case RECONCILE:
		return "RECONCILE"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Source names, as upstream.
const (
	FileSource = "file"
	HTTPSource = "http"
	APISource  = "api"
)

// Annotations the agent sets on pods.
const (
	// ConfigSourceAnnotationKey names the source a pod came from.
	ConfigSourceAnnotationKey = "kubernetes.io/config.source"
	// ConfigHashAnnotationKey carries a static pod's content hash (its UID).
	ConfigHashAnnotationKey = "kubernetes.io/config.hash"
	// ConfigFirstSeenAnnotationKey is when the agent first saw the pod's UID.
	ConfigFirstSeenAnnotationKey = "kubernetes.io/config.seen"
	// ConfigMirrorAnnotationKey marks a mirror pod in the API server; its
	// value is the config hash of the static pod it mirrors.
	ConfigMirrorAnnotationKey = "kubernetes.io/config.mirror"
)

// PodUpdate is what sources send to the merge (Op SET) and what the merge
// sends to the sync loop (the other operations). Pods received from the merge
// are copies owned by the receiver.
type PodUpdate struct {
	Op     Op
	Source string
	Pods   []*v1.Pod
}

// PodFullName is the key under which the agent knows a pod: upstream's
// "<name>_<namespace>". Two pods with one full name cannot run together.
func PodFullName(pod *v1.Pod) string {
	return pod.Name + "_" + pod.Namespace
}

// IsStaticPod says whether the pod comes from a local source (file or http)
// rather than from the API server.
func IsStaticPod(pod *v1.Pod) bool {
	source := pod.Annotations[ConfigSourceAnnotationKey]
	return source != "" && source != APISource
}

// IsMirrorPod says whether the pod is the API server's mirror of a static pod.
func IsMirrorPod(pod *v1.Pod) bool {
	_, ok := pod.Annotations[ConfigMirrorAnnotationKey]
	return ok
}

// PodConditionByAgent says whether the agent owns a pod condition type,
// as upstream's PodConditionByKubelet: the agent computes these
// (podstatus.Generate) and writes them over the API's; every other
// condition (a readiness gate's, DisruptionTarget, a controller's) is
// kept as the API has it. The one rule for both.
func PodConditionByAgent(t v1.PodConditionType) bool {
	switch t {
	case v1.PodReadyToStartContainers, v1.PodInitialized, v1.PodReady, v1.ContainersReady, v1.PodScheduled,
		v1.PodResizePending, v1.PodResizeInProgress:
		return true
	}
	return false
}
