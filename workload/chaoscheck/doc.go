// Package chaoscheck decides whether a run of writers and watchers under
// faults lost, duplicated or reordered anything. It holds no goroutines and
// does no I/O: the runner records what the clients saw (acknowledged and
// unknown writes, each watcher's lists and events) and the final state read
// back from the API and from etcd, and these functions judge it.
//
// The rules:
//   - A write is acknowledged when its request succeeded; one whose request
//     failed without a definite answer (connection cut, timeout, 5xx) is
//     unknown: it may or may not have landed, so it is neither required nor
//     forbidden in the final state. A conflict or AlreadyExists is a definite
//     "not written" and is not recorded.
//   - Every acknowledged write must be in the final list and in etcd: the
//     object's final sequence number is at least the write's, its final
//     resourceVersion at least the write's, and the final sequence number
//     is one some acknowledged or unknown write carried. After an
//     acknowledged delete the object is gone, or back with a newer write.
//   - A watcher's stream is a list followed by events; after a 410 it lists
//     again and continues from that list. Events must come in strictly
//     increasing resourceVersion order (an event at or below the last one
//     is duplicated if it was delivered before, reordered if not). Every
//     acknowledged write the watcher's selector matches, newer than its
//     first list and not covered by a later re-list, must have been
//     delivered; and the state the stream builds must equal a fresh list.
package chaoscheck
