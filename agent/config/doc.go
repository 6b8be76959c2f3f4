// Package config merges the pods of the agent's sources (file, http, api)
// into one stream of incremental operations for the sync loop, as upstream's
// pkg/kubelet/config PodConfig does.
//
// It is split like etcd raft's rawnode and node: Merge is a pure function
// from the previous State and one source's update to the next State, the
// operations to emit and the problems found; PodConfig is the thin runner, one
// goroutine that owns the State, reads sources' updates from one channel and
// sends the operations on another.
//
// Operations come in upstream's order for each update: REMOVE (gone from
// its source), ADD (new UID), UPDATE (spec, labels, non-agent annotations or
// deletion grace period changed), DELETE (deletionTimestamp set), RECONCILE
// (only the status changed). Identical snapshots emit nothing. A source's
// first report with nothing to add emits an empty ADD so the consumer learns
// that the source has reported.
//
// Differences from upstream, each for a complaint its users have:
//   - "Seen" is per source: a source that has not reported yet blocks only
//     what depends on it (the removal of its own pods, which the merge cannot
//     even compute before it reports), never another source's work.
//   - A pod full name (name_namespace) claimed by two sources is kept from
//     the source that claimed it first and the other is reported, not left to
//     collide later in the sync loop; when the first lets it go, the other's
//     pod is added. A UID is claimed the same way: static pods may set
//     metadata.uid, and two pods of one UID under different names would be
//     one pod to the sync loop, which a REMOVE of either would stop. Mirror pods (the API server's copies of static pods) are
//     not claims: they stand for the static pod and pass through.
//   - Duplicates are reported once while they last, not on every snapshot.
package config
