package main

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	apiextensionsopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/util/webhook"
)

// newAPIExtensions is kube-apiserver's apiextensions server
// (k8s.io/apiextensions-apiserver: CustomResourceDefinitions, their
// naming, establishing and cleanup controllers, and the custom resource
// handler with upstream's validation, pruning, defaulting, field manager,
// cacher and etcd3 store) as the delegate of the pods server, as
// kube-apiserver builds it (cmd/kube-apiserver/app/apiextensions.go): a
// shallow copy of the server's config without its post-start hooks, with
// CRDs stored as kube-apiserver stores them (its legacy codec, v1beta1)
// and custom resources as JSON through the same cacher and etcd3 store as
// pods. Discovery of custom resources is left out: kube-apiserver's
// aggregator merges it into /apis, which this server does not run (the
// bench addresses custom resources by path).
func newAPIExtensions(cfg *genericapiserver.RecommendedConfig, etcd storagebackend.TransportConfig) (*apiextensionsapiserver.CustomResourceDefinitions, error) {
	generic := cfg.Config
	generic.PostStartHooks = map[string]genericapiserver.PostStartHookConfigEntry{}
	generic.MergedResourceConfig = apiextensionsapiserver.DefaultAPIResourceConfigSource()
	// The CRDs' field manager needs their OpenAPI models, which the pods
	// server's definitions lack.
	generic.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(
		apiextensionsopenapi.GetOpenAPIDefinitions, openapinamer.NewDefinitionNamer(apiextensionsapiserver.Scheme))

	crdCodec := apiextensionsapiserver.Codecs.LegacyCodec(apiextensionsv1beta1.SchemeGroupVersion, apiextensionsv1.SchemeGroupVersion)
	crds := storagebackend.NewDefaultConfig("/registry", crdCodec)
	crds.Transport = etcd
	crds.EncodeVersioner = runtime.NewMultiGroupVersioner(apiextensionsv1beta1.SchemeGroupVersion, schema.GroupKind{Group: apiextensionsv1beta1.GroupName})
	generic.RESTOptionsGetter = restOptionsGetter{config: crds}

	// Custom resources are unstructured JSON in etcd, as
	// NewCRDRESTOptionsGetter (pkg/cmd/server/options) makes them with
	// CBOR storage off (the default); the custom resource handler wraps
	// this codec in its conversion, pruning and defaulting.
	crs := storagebackend.NewDefaultConfig("/registry", runtime.NewCodec(unstructured.UnstructuredJSONScheme, unstructured.UnstructuredJSONScheme))
	crs.Transport = etcd
	c := &apiextensionsapiserver.Config{
		GenericConfig: &genericapiserver.RecommendedConfig{Config: generic},
		ExtraConfig: apiextensionsapiserver.ExtraConfig{
			CRDRESTOptionsGetter: restOptionsGetter{config: crs},
			MasterCount:          1,
			ServiceResolver:      webhook.NewDefaultServiceResolver(),
		},
	}
	return c.Complete().New(genericapiserver.NewEmptyDelegate())
}
