package api_test

import (
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	v1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes"
)

var crdCodecs = func() runtime.NegotiatedSerializer {
	s := runtime.NewScheme()
	apiextensionsv1.AddToScheme(s)
	return serializer.NewCodecFactory(s).WithoutConversion()
}()

func clientv3WithPrefix() []clientv3.OpOption {
	return []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithKeysOnly()}
}

func clientset(t *testing.T) *kubernetes.Clientset { return kubernetes.NewForConfigOrDie(config(t)) }

func namespaceObject(name string) *v1.Namespace {
	return &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}
