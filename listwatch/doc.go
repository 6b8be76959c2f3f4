// Package listwatch is the client side of list and watch: the ListerWatcher
// seam, the Reflector that lists then watches, and the stores it fills.
//
// A ListerWatcher lists and watches one resource; ListWatchFuncs, and
// FromRESTClient / FromTypedClient over client-go, make one. A Reflector
// lists it into a Store, then watches from the list's resourceVersion and
// applies each event, following bookmarks, resuming closed watches, backing
// off after failures (Backoff) and re-listing when its resourceVersion has
// expired; HasSynced says when the first list is in the store. Indexer is a
// thread-safe typed Store keyed by namespace/name with named secondary
// indexes (such as spec.nodeName); UndeltaStore pushes the whole content to
// a function after every change, for consumers that want snapshots.
//
// One implementation serves two users: the watch cache fills itself from the
// etcd store through it, and the node agent watches the API server with it.
package listwatch
