package main

import (
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/kite-project/kite/apis/core/defaults"
)

// The generic apiserver decodes requests into an internal version and
// stores and serves external ones. The internal core types live in
// k8s.io/kubernetes, which is not a library, so this server registers the
// v1 Go types as the internal version too: every "conversion" is then the
// identity and costs nothing, which favours upstream slightly (kube-apiserver
// converts v1 <-> internal on every write and on every read that misses
// the cache's encoded bytes).
var internalVersion = schema.GroupVersion{Group: "", Version: runtime.APIVersionInternal}

// newScheme returns the scheme and codecs of core/v1 pods and namespaces.
func newScheme() (*runtime.Scheme, serializer.CodecFactory, error) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, serializer.CodecFactory{}, err
	}
	types := []runtime.Object{&corev1.Pod{}, &corev1.PodList{}, &corev1.Namespace{}, &corev1.NamespaceList{}}
	scheme.AddKnownTypes(internalVersion, types...)
	for _, t := range types {
		// Same type on both sides: copy by value, in case anything
		// asks the converter rather than short-circuiting.
		if err := scheme.AddConversionFunc(t, t, func(a, b any, _ conversion.Scope) error {
			reflect.ValueOf(b).Elem().Set(reflect.ValueOf(a).Elem())
			return nil
		}); err != nil {
			return nil, serializer.CodecFactory{}, err
		}
	}
	// As sample-apiserver and kube-apiserver do: the unversioned meta
	// types of discovery and errors.
	unversioned := schema.GroupVersion{Group: "", Version: "v1"}
	scheme.AddUnversionedTypes(unversioned, &metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
	if err := scheme.AddFieldLabelConversionFunc(corev1.SchemeGroupVersion.WithKind("Pod"), podFieldLabel); err != nil {
		return nil, serializer.CodecFactory{}, err
	}
	// kube-apiserver defaults a v1 object as it decodes it, before the
	// field manager and the registry see it, so stored pods carry every
	// default (and managedFields name them). Without this the reference
	// stored pods half the size of Kite's (1.3 KB of JSON against 2.3 KB)
	// and every list, watch and memory figure favoured it. The defaults
	// are Kite's, which follow upstream's v1 defaulting (tested there).
	scheme.AddTypeDefaultingFunc(&corev1.Pod{}, func(obj any) { defaults.Pod(obj.(*corev1.Pod)) })
	scheme.AddTypeDefaultingFunc(&corev1.Namespace{}, func(obj any) { defaults.Namespace(obj.(*corev1.Namespace)) })
	if err := scheme.SetVersionPriority(corev1.SchemeGroupVersion); err != nil {
		return nil, serializer.CodecFactory{}, err
	}
	return scheme, serializer.NewCodecFactory(scheme), nil
}

// podFieldLabel allows the pod fields the bench selects on.
func podFieldLabel(label, value string) (string, string, error) {
	switch label {
	case "metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy", "status.phase":
		return label, value, nil
	}
	return "", "", fmt.Errorf("field label not supported: %s", label)
}
