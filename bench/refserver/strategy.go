package main

import (
	"context"
	"fmt"

	"github.com/kite-project/kite/apis/core/qos"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/client-go/tools/cache"
)

// strategy is the create/update/delete policy of one resource: upstream's
// registry machinery with no validation of its own (that lives in
// k8s.io/kubernetes; Kite validates every pod, so this favours upstream
// slightly). Defaulting happens at decode, as upstream's (see newScheme).
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	namespaced bool
}

var (
	_ rest.RESTCreateStrategy = strategy{}
	_ rest.RESTUpdateStrategy = strategy{}
	_ rest.RESTDeleteStrategy = strategy{}
)

func (s strategy) NamespaceScoped() bool { return s.namespaced }

// PrepareForCreate sets a new pod's status as upstream's pod strategy
// does: Pending, with its QoS class.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	if pod, ok := obj.(*corev1.Pod); ok {
		pod.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: qos.ComputePodQOS(pod)}
	}
}
func (strategy) Validate(context.Context, runtime.Object) field.ErrorList  { return nil }
func (strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }
func (strategy) Canonicalize(runtime.Object)                               {}
func (strategy) AllowCreateOnUpdate(context.Context) bool                  { return false }
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {
}
func (strategy) ValidateUpdate(context.Context, runtime.Object, runtime.Object) field.ErrorList {
	return nil
}
func (strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}
func (strategy) AllowUnconditionalUpdate(context.Context) bool { return true }

// podAttrs are the labels and selectable fields of a pod.
func podAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil, fmt.Errorf("not a pod: %T", obj)
	}
	return labels.Set(pod.Labels), fields.Set{
		"metadata.name":      pod.Name,
		"metadata.namespace": pod.Namespace,
		"spec.nodeName":      pod.Spec.NodeName,
		"spec.restartPolicy": string(pod.Spec.RestartPolicy),
		"status.phase":       string(pod.Status.Phase),
	}, nil
}

// nodeNameTrigger is upstream's pod trigger function: watchers of one node
// are offered only that node's events.
func nodeNameTrigger(obj runtime.Object) string { return obj.(*corev1.Pod).Spec.NodeName }

// nodeNameIndex is upstream's spec.nodeName index of the cacher.
func nodeNameIndex(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	return []string{pod.Spec.NodeName}, nil
}

// newPodStore is upstream's generic registry Store for pods, as
// pkg/registry/core/pod/storage builds it: spec.nodeName trigger function
// and index, the cacher in front of the etcd3 store.
func newPodStore(typer runtime.ObjectTyper, opts generic.RESTOptionsGetter) (*genericregistry.Store, error) {
	s := strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator, namespaced: true}
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &corev1.Pod{} },
		NewListFunc:               func() runtime.Object { return &corev1.PodList{} },
		PredicateFunc:             podPredicate,
		DefaultQualifiedResource:  corev1.Resource("pods"),
		SingularQualifiedResource: corev1.Resource("pod"),
		CreateStrategy:            s,
		UpdateStrategy:            s,
		DeleteStrategy:            s,
		TableConvertor:            rest.NewDefaultTableConvertor(corev1.Resource("pods")),
	}
	err := store.CompleteWithOptions(&generic.StoreOptions{
		RESTOptions: opts,
		AttrFunc:    podAttrs,
		TriggerFunc: storage.IndexerFuncs{"spec.nodeName": nodeNameTrigger},
		Indexers:    &cache.Indexers{storage.FieldIndex("spec.nodeName"): nodeNameIndex},
	})
	return store, err
}

// podPredicate matches pods by label and field, using the nodeName index.
func podPredicate(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: podAttrs, IndexFields: []string{"spec.nodeName"}}
}

// newNamespaceStore stores namespaces with no finalizers: a deleted
// namespace goes at once (kite bench deletes its pods first).
func newNamespaceStore(typer runtime.ObjectTyper, opts generic.RESTOptionsGetter) (*genericregistry.Store, error) {
	s := strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator}
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &corev1.Namespace{} },
		NewListFunc:               func() runtime.Object { return &corev1.NamespaceList{} },
		DefaultQualifiedResource:  corev1.Resource("namespaces"),
		SingularQualifiedResource: corev1.Resource("namespace"),
		CreateStrategy:            s,
		UpdateStrategy:            s,
		DeleteStrategy:            s,
		TableConvertor:            rest.NewDefaultTableConvertor(corev1.Resource("namespaces")),
	}
	err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: opts})
	return store, err
}
