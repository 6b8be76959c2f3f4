// Package registry turns REST verbs into calls on a
// k8s.io/apiserver/pkg/storage.Interface: one generic Store, driven by a
// Strategy per resource that says what is special about it (defaulting,
// validation, what create and update may change, selectable fields, the
// trigger field the watch cache indexes, graceful deletion, subresources).
//
// The Store knows nothing about HTTP: the apiserver package decodes
// requests, calls the Store, and encodes what it returns. Errors returned
// by the Store are API status errors (k8s.io/apimachinery/pkg/api/errors)
// with upstream's codes and messages, ready to be written to a client.
//
// Keys follow kube-apiserver: "/<prefix>/<namespace>/<name>" for namespaced
// objects and "/<prefix>/<name>" for cluster-scoped ones, where <prefix> is
// the resource name except for upstream's historical exceptions (nodes are
// stored under "minions", services under "services/specs"). The storage
// given to a Store adds the "/registry" root.
//
// Deletion follows upstream's rest.BeforeDelete and Store.Delete. A
// resource with a grace period (Strategy.GracePeriod: pods) is first
// marked with deletionTimestamp now plus the grace period and
// deletionGracePeriodSeconds; a later DELETE may only shorten it, down to
// 0 (the kubelet's final delete), moving deletionTimestamp back but never
// into the past, and the shorter grace is written also while finalizers
// keep the object. An object that finalizers keep and that has no grace
// period to run gets grace 0. An update that leaves an object being
// deleted with grace 0 (or none) without finalizers deletes it
// (upstream's ShouldDeleteDuringUpdate; a namespace waits for its
// spec.finalizers too). Namespaces and CustomResourceDefinitions mark
// their first deletion their own way (Strategy.MarkForDeletion).
package registry
