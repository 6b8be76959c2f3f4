// Package watchcache is Kite's watch cache: a storage.Interface that sits
// on the etcd store and serves lists, gets and watches of one resource from
// memory, while writes go through to etcd.
//
// The cache fills itself with a listwatch.Reflector over the store (a
// consistent list, then a watch with progress notifications) and keeps:
//
//   - a snapshot of every object, a persistent B-tree ordered by key, so a
//     list takes a snapshot in O(1) and walks it without a lock;
//   - indexes over it by the resource's indexers (pods: spec.nodeName);
//   - the event window, a ring of the most recent events holding at least
//     75 s of history within a size bound; watches resume from it and
//     exact-resourceVersion lists and continue tokens are served from it
//     (the snapshot at N is the latest one with newer events undone);
//   - the watchers, filed by key and by indexed value, so that an event is
//     offered only to the watchers that can match it.
//
// Ingestion never waits for watchers, and reads never wait for the
// dispatcher: ingestion applies an event under the lock and hands it to
// the dispatcher goroutine, which filters it for each candidate watcher and
// appends it to that watcher's queue without blocking. The dispatcher alone
// owns the watchers' registry: a new watch queues its registration the
// same way, behind the changes its start holds. Each watcher's goroutine feeds its client at the client's pace;
// a watcher whose buffer stays full past a small budget is ended with 410
// Expired, so its client re-lists, and the others never notice. The budget
// runs from the end of a watcher's initial events (and the backlog queued
// while it sent them): until then only a backlog longer than the event
// window ends it.
//
// Every object and event object is a CachedObject: its encodings (JSON,
// protobuf, ...) are made at most once and shared by all who send it.
// Watch events carry them as their objects; ListCached returns a list's
// items as them (GetList returns plain typed lists, as storage.Interface
// requires), so that an item encoder reuses the bytes of watches and of
// other lists.
//
// Objects of one resource repeat themselves: the pods of a Deployment have
// the same labels, managedFields, images and resource lists. The cache
// interns what it takes in (package intern; labels, annotations and
// managedFields for every resource, more through Options.Intern), so that
// each such part is held once, not once per object (kite bench's pods: 3.3
// KB of heap each instead of 6.1 KB). Interned parts
// are shared between objects, one more reason that nothing may change an
// object the cache handed out.
//
// An unstructured object (a custom resource) is kept as its JSON with its
// metadata typed beside it (jsonObject), not as the map tree it decodes
// to, which is several times larger; copies decode the JSON.
//
// Usage:
//
//	c, err := watchcache.New(watchcache.Options{
//		Store:          etcdStore,
//		ResourcePrefix: "/pods",
//		KeyFunc:        func(obj runtime.Object) (string, error) { return storage.NamespaceKeyFunc("/pods/", obj) },
//		NewFunc:        func() runtime.Object { return &v1.Pod{} },
//		NewListFunc:    func() runtime.Object { return &v1.PodList{} },
//		AttrFunc:       podAttrs,
//		Indexers:       storage.IndexerFuncs{"spec.nodeName": podNodeName},
//	})
//	c.Start(ctx)
//	defer c.Stop()
//	// c is a storage.Interface; before its first list it serves from etcd.
package watchcache
