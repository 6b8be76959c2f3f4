// Package mirror keeps a mirror pod in the API server for each static pod
// the agent runs (pods from the file and http sources), as upstream's
// kubelet does (pkg/kubelet/pod/mirror_client.go and SyncPod):
//
//   - a mirror pod is the static pod's copy with the annotation
//     kubernetes.io/config.mirror = the static pod's config hash, and an
//     ownerReference to the Node object (apiVersion v1, kind Node,
//     controller: true), as NodeRestriction admission requires;
//   - a static pod without a mirror gets one; one whose mirror is being
//     deleted (deleted through the API) or out of date (its hash differs)
//     has it deleted at once (grace period 0, with its UID as a
//     precondition) and created again;
//   - a mirror pod whose static pod is gone is deleted, once every static
//     source has reported, so that an agent starting up does not delete the
//     mirrors of pods it has not read yet.
//
// Mirror pods stand for static pods; they are never run. Deleting one
// through the API never stops its static pod: the agent recreates it. The
// agent's runner (package run) recognises them in the api source's stream
// by their annotation (kubetypes.IsMirrorPod), feeds them here, and keeps
// them from the consumer.
//
// It is split like package config: Decide is a pure function from the
// desired static pods and the observed mirror pods to the calls to make;
// Reconciler is the thin runner, one goroutine that makes them through the
// API and retries after failures.
package mirror
