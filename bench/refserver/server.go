package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/token/tokenfile"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kite-project/kite/storage/etcd/embedded"
)

type options struct {
	dataDir       string
	port          int
	unsafeNoFsync bool
}

// run starts etcd and the server, writes the kubeconfig and serves until
// ctx ends.
func run(ctx context.Context, opts options, out io.Writer) error {
	etcd, err := embedded.Start(ctx, embedded.Options{DataDir: opts.dataDir, UnsafeNoFsync: opts.unsafeNoFsync})
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	defer etcd.Close()

	scheme, codecs, err := newScheme()
	if err != nil {
		return err
	}
	cfg := genericapiserver.NewRecommendedConfig(codecs)
	cfg.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	secure := genericoptions.NewSecureServingOptions()
	secure.ServerCert.CertDirectory = filepath.Join(opts.dataDir, "certs")
	if secure.Listener, secure.BindPort, err = genericoptions.CreateListener("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(opts.port)), net.ListenConfig{}); err != nil {
		return err
	}
	if err := secure.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{net.ParseIP("127.0.0.1")}); err != nil {
		return fmt.Errorf("serving certificate: %w", err)
	}
	// The generic server talks to itself over a loopback client (for
	// post-start hooks); it gets a token of its own.
	if err := secure.WithLoopback().ApplyTo(&cfg.SecureServing, &cfg.LoopbackClientConfig); err != nil {
		return err
	}
	// A bearer token, as Kite's admin has: upstream answers anonymous
	// HTTP/2 requests with Connection: close (a DoS mitigation), which
	// would make every request a new TLS handshake.
	token, err := newToken()
	if err != nil {
		return err
	}
	cfg.Authentication.Authenticator = bearertoken.New(tokenfile.New(map[string]*user.DefaultInfo{
		token: {Name: "admin", Groups: []string{user.SystemPrivilegedGroup}},
	}))
	cfg.Authorization.Authorizer = authorizerfactory.NewAlwaysAllowAuthorizer()
	defs, err := getDefinitions(
		&corev1.Pod{}, &corev1.PodList{}, &corev1.Namespace{}, &corev1.NamespaceList{},
		&metav1.Status{}, &metav1.DeleteOptions{}, &metav1.WatchEvent{}, &metav1.Patch{},
		&metav1.APIResourceList{}, &metav1.APIGroupList{}, &metav1.APIVersions{},
	)
	if err != nil {
		return err
	}
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(defs, openapinamer.NewDefinitionNamer(scheme))
	cfg.SkipOpenAPIInstallation = true

	storageCodec, err := storageCodec(codecs)
	if err != nil {
		return err
	}
	sc := storagebackend.NewDefaultConfig("/registry", storageCodec)
	// The embedded etcd takes only clients with its client certificate.
	tlsFiles := etcd.ClientTLS()
	sc.Transport.ServerList = etcd.ClientURLs()
	sc.Transport.TrustedCAFile = tlsFiles.CAFile
	sc.Transport.CertFile = tlsFiles.CertFile
	sc.Transport.KeyFile = tlsFiles.KeyFile
	restOptions := restOptionsGetter{config: sc}
	cfg.RESTOptionsGetter = restOptions

	// Last in the chain, as in kube-apiserver: what the pods server does
	// not serve goes to the apiextensions server.
	extensions, err := newAPIExtensions(cfg, sc.Transport)
	if err != nil {
		return fmt.Errorf("apiextensions: %w", err)
	}
	server, err := cfg.Complete().New("refserver", extensions.GenericAPIServer)
	if err != nil {
		return err
	}
	pods, err := newPodStore(scheme, restOptions)
	if err != nil {
		return fmt.Errorf("pods: %w", err)
	}
	namespaces, err := newNamespaceStore(scheme, restOptions)
	if err != nil {
		return fmt.Errorf("namespaces: %w", err)
	}
	group := genericapiserver.NewDefaultAPIGroupInfo("", scheme, runtime.NewParameterCodec(scheme), codecs)
	group.VersionedResourcesStorageMap["v1"] = map[string]rest.Storage{"pods": pods, "namespaces": namespaces}
	if err := server.InstallLegacyAPIGroup(genericapiserver.DefaultLegacyAPIPrefix, &group); err != nil {
		return err
	}

	path := filepath.Join(opts.dataDir, "kubeconfig")
	if err := writeKubeconfig(path, fmt.Sprintf("https://127.0.0.1:%d", secure.BindPort), token); err != nil {
		return err
	}
	if err := server.AddPostStartHook("refserver-ready", func(genericapiserver.PostStartHookContext) error {
		fmt.Fprintf(out, "ready %s\n", path)
		return nil
	}); err != nil {
		return err
	}
	return server.PrepareRun().RunWithContext(ctx)
}

// storageCodec writes v1 protobuf to etcd, as kube-apiserver does, and
// decodes to the (identical) internal version.
func storageCodec(codecs serializer.CodecFactory) (runtime.Codec, error) {
	for _, info := range codecs.SupportedMediaTypes() {
		if info.MediaType == runtime.ContentTypeProtobuf {
			return codecs.CodecForVersions(info.Serializer, codecs.UniversalDeserializer(), corev1.SchemeGroupVersion, runtime.InternalGroupVersioner), nil
		}
	}
	return nil, fmt.Errorf("no protobuf serializer")
}

// restOptionsGetter gives every resource the etcd3 store behind the
// cacher, as kube-apiserver does with its watch cache on (the default).
type restOptionsGetter struct{ config *storagebackend.Config }

func (g restOptionsGetter) GetRESTOptions(gr schema.GroupResource, _ runtime.Object) (generic.RESTOptions, error) {
	return generic.RESTOptions{
		StorageConfig:           g.config.ForResource(gr),
		Decorator:               genericregistry.StorageWithCacher(),
		DeleteCollectionWorkers: 1,
		ResourcePrefix:          resourcePrefix(gr),
		CountMetricPollPeriod:   0,
	}, nil
}

// resourcePrefix is where kube-apiserver keeps a resource in etcd, under
// /registry: <resource> for the core group, <group>/<resource> for others
// (custom resources and CRDs among them).
func resourcePrefix(gr schema.GroupResource) string {
	if gr.Group == "" {
		return gr.Resource
	}
	return gr.Group + "/" + gr.Resource
}

// newToken returns a random admin token.
func newToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// writeKubeconfig writes a kubeconfig for server with the admin token; the
// certificate is self-signed, so the client does not verify it.
func writeKubeconfig(path, server, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["refserver"] = &clientcmdapi.Cluster{Server: server, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["refserver"] = &clientcmdapi.Context{Cluster: "refserver", AuthInfo: "admin"}
	cfg.CurrentContext = "refserver"
	return clientcmd.WriteToFile(*cfg, path)
}
