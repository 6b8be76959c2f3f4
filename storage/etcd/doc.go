// Package etcd is Kite's etcd store: an implementation of
// k8s.io/apiserver/pkg/storage.Interface over an etcd v3 cluster, with the
// observable behaviour of kube-apiserver's etcd3 store, so that upstream's
// conformance suite (k8s.io/apiserver/pkg/storage/testing) runs against it
// unchanged.
//
// Layout of the data: each object lives under
// <Prefix>/<ResourcePrefix>/<namespace>/<name> (cluster-scoped objects have
// no namespace segment), encoded by the codec given in Options (the API
// server gives the protobuf serializer, so values start with "k8s\x00" as
// kube-apiserver writes them). resourceVersion is the etcd revision: the mod
// revision for an object, the header revision for a list. It is never stored
// in the value.
//
// Usage:
//
//	client := etcd.NewClient(etcdClientV3)   // or kubernetes.New(cfg)
//	compactor := etcd.NewCompactor(etcd.CompactorOptions{Client: etcdClientV3})
//	go compactor.Run(ctx)                    // every 5 minutes by default
//	store, err := etcd.New(etcd.Options{
//		Client:         client,
//		Codec:          codec,
//		NewFunc:        func() runtime.Object { return &v1.Pod{} },
//		NewListFunc:    func() runtime.Object { return &v1.PodList{} },
//		Prefix:         "/registry",
//		ResourcePrefix: "/pods",
//		GroupResource:  schema.GroupResource{Resource: "pods"},
//		Compactor:      compactor,
//	})
//
// Errors follow upstream exactly: a revision older than the last compaction
// is Expired (410 for clients), one newer than etcd's current revision is
// TooLargeResourceVersion (504 with a retry hint), a value that cannot be
// decoded is a CorruptObj storage error naming the key.
package etcd
