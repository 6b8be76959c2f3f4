package kite_test

import (
	clientv3 "go.etcd.io/etcd/client/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

var crdCodecs = func() runtime.NegotiatedSerializer {
	s := runtime.NewScheme()
	apiextensionsv1.AddToScheme(s)
	return serializer.NewCodecFactory(s).WithoutConversion()
}()

func clientv3WithPrefix() []clientv3.OpOption {
	return []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithKeysOnly()}
}
