package kite

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	agentserver "github.com/kite-project/kite/agent/server"
	"github.com/kite-project/kite/apiserver"
	"github.com/kite-project/kite/apiserver/authn"
	"github.com/kite-project/kite/apiserver/metrics"
	"github.com/kite-project/kite/apiserver/nodeproxy"
	"github.com/kite-project/kite/apiserver/openapi"
	"github.com/kite-project/kite/apiserver/table"
	"github.com/kite-project/kite/batchconn"
	"github.com/kite-project/kite/controllers"
	"github.com/kite-project/kite/controllers/crd"
	"github.com/kite-project/kite/kubeconfig"
	"github.com/kite-project/kite/pki"
	"github.com/kite-project/kite/registry"
	"github.com/kite-project/kite/registry/builtin"
	"github.com/kite-project/kite/storage/etcd/backend"
	"github.com/kite-project/kite/storage/etcd/embedded"
	kiteversion "github.com/kite-project/kite/version"
)

// http2Config is kube-apiserver's HTTP/2 configuration (k8s.io/apiserver
// secure serving): 100 streams per connection unless told otherwise (a
// client then opens another connection, which also spreads a watcher-heavy
// client's streams over several connection goroutines), and 256 KiB
// frames and per-stream buffers, enough for most request bodies in one
// frame. A connection whose writes make no progress for writeTimeout is
// closed: its client has stopped reading, and its streams end with it.
func http2Config(maxStreams int, writeTimeout time.Duration) *http.HTTP2Config {
	const resourceBody99Percentile = 256 << 10
	if maxStreams <= 0 {
		maxStreams = DefaultHTTP2MaxStreamsPerConnection
	}
	return &http.HTTP2Config{
		MaxConcurrentStreams:          maxStreams,
		MaxReadFrameSize:              resourceBody99Percentile,
		MaxReceiveBufferPerStream:     resourceBody99Percentile,
		MaxReceiveBufferPerConnection: resourceBody99Percentile * maxStreams,
		WriteByteTimeout:              writeTimeout,
	}
}

// profiles serves Go's runtime profiles, as kube-apiserver's
// /debug/pprof/ does.
func profiles() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// DefaultVersion is the Kubernetes version Kite reports: the version of
// the k8s.io modules whose API it serves.
func DefaultVersion() version.Info {
	return version.Info{
		Major:      kiteversion.Major,
		Minor:      kiteversion.Minor,
		GitVersion: kiteversion.GitVersion,
		GoVersion:  runtime.Version(),
		Compiler:   runtime.Compiler,
		Platform:   runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// Server is a running control plane.
type Server struct {
	restConfig     *rest.Config
	url            string
	kubeconfigPath string
	dataDir        string
	removeDataDir  bool

	metrics *metrics.Metrics
	etcd    *backend.Backend
	ownEtcd bool // opened by Start, closed by Close
	http    *http.Server
	api     *apiserver.Server
	scheme  *k8sruntime.Scheme
	// resources owns the served resources' storage stacks.
	resources *resourceSet
	// crdFollower follows the CRD objects, installing their resources
	// into resources through crdInstaller.
	crdFollower  *crdFollower
	crdInstaller *crdInstaller
	// stopCRDController ends the CRD controller (controllers/crd) and
	// waits for it.
	stopCRDController func()
	ctrl              *controllers.Manager
	bundle            *pki.Bundle
	// stopControllers ends the controllers and waits for them: Close
	// calls it first, so that they never see the API go away.
	stopControllers func()
	// nodeProxy carries pods/log, exec, attach and portforward to agents;
	// Close closes its connections.
	nodeProxy *nodeproxy.Proxy
	runCtx    context.Context    // lives until Close: stacks built while serving run under it
	cancel    context.CancelFunc // ends background loops and open requests
	wg        sync.WaitGroup     // background loops
	errc      chan error
	closeErr  error
	once      sync.Once
}

// Start runs a control plane and returns once the API answers. ctx bounds
// the start only; the Server runs until Close.
func Start(ctx context.Context, opts Options) (_ *Server, err error) {
	if err := pki.CheckHosts(opts.ExtraSANs); err != nil {
		return nil, fmt.Errorf("ExtraSANs: %w", err)
	}
	s := &Server{errc: make(chan error, 1)}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.dataDir = opts.DataDir; s.dataDir == "" {
		if s.dataDir, err = os.MkdirTemp("", "kite-"); err != nil {
			return nil, fmt.Errorf("create a temporary data directory: %w", err)
		}
		s.removeDataDir = true
	}
	if err := os.MkdirAll(s.dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory %s: %w", s.dataDir, err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s.runCtx, s.cancel = runCtx, cancel

	if s.etcd = opts.Backend; s.etcd == nil {
		s.etcd, err = backend.Open(ctx, backend.Options{
			External: backend.ExternalOptions{Servers: opts.EtcdServers},
			Embedded: embedded.Options{DataDir: s.dataDir, UnsafeNoFsync: opts.EtcdUnsafeNoFsync, LogLevel: opts.EtcdLogLevel},
		})
		if err != nil {
			return nil, fmt.Errorf("open etcd: %w", err)
		}
		s.ownEtcd = true
	}
	if errc := s.etcd.Err(); errc != nil {
		s.wg.Go(func() {
			select {
			case err := <-errc:
				s.fail(fmt.Errorf("etcd: %w", err))
			case <-runCtx.Done():
			}
		})
	}
	s.metrics = metrics.New(metrics.Options{RuntimeMetrics: true})
	if err := s.buildStores(runCtx, opts); err != nil {
		return nil, err
	}
	if err := s.ensureNamespaces(ctx); err != nil {
		return nil, err
	}

	bundle, err := pki.Ensure(filepath.Join(s.dataDir, "pki"), pki.Options{Hosts: servingHosts(opts)})
	if err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	token, err := pki.EnsureToken(filepath.Join(s.dataDir, "pki", pki.TokenFile))
	if err != nil {
		return nil, fmt.Errorf("admin token: %w", err)
	}
	authenticator, err := authn.New(authn.Options{Tokens: []authn.Token{authn.Admin(token)}})
	if err != nil {
		return nil, err
	}
	v := opts.Version
	if v == (version.Info{}) {
		v = DefaultVersion()
	}
	oa, err := openapi.New(openapi.Options{Resources: s.resources.openAPIResources(), Version: v.GitVersion})
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	if err := enableScaleApply(s.resources.build.fields, oa); err != nil {
		return nil, err
	}
	kubeletClient, err := bundle.Issue(pki.IssueOptions{CommonName: agentserver.ClientCommonName, Client: true})
	if err != nil {
		return nil, fmt.Errorf("client certificate for agents: %w", err)
	}
	s.bundle = bundle
	nodes, err := nodeproxy.New(nodeproxy.Options{Pods: s.resources.store("pods"), Nodes: s.resources.store("nodes"), ClientCertificate: kubeletClient})
	if err != nil {
		return nil, err
	}
	s.nodeProxy = nodes
	extra := map[string]http.Handler{"/openapi/": oa}
	if opts.Profiling {
		extra["/debug/pprof/"] = profiles()
	}
	s.api, err = apiserver.New(apiserver.Options{
		Extra:         extra,
		Stores:        s.resources.stores(),
		Scheme:        s.scheme,
		Version:       v,
		Authenticator: authenticator,
		Connect:       nodes,
		Checks:        []apiserver.HealthCheck{{Name: "etcd", Check: s.checkEtcd}},
		ReadyChecks:   []apiserver.HealthCheck{{Name: "storage", Check: s.checkStorage}},
		Tables:        tableFunc(s.scheme, s.crdInstaller.tableColumns),
		Metrics:       s.metrics,

		MinRequestTimeout:           opts.MinRequestTimeout,
		MaxRequestsInFlight:         opts.MaxRequestsInFlight,
		MaxMutatingRequestsInFlight: opts.MaxMutatingRequestsInFlight,
		WriteTimeout:                opts.WriteTimeout,
	})
	if err != nil {
		return nil, err
	}
	s.resources.serve(s.api, oa)
	// Only now: what the follower installs must reach the API server.
	s.wg.Go(func() { s.crdFollower.Run(runCtx) })

	host := opts.BindAddress
	if host == "" {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(opts.SecurePort)))
	if err != nil {
		return nil, fmt.Errorf("listen on %s:%d: %w", host, opts.SecurePort, err)
	}
	readHeaderTimeout := opts.ReadHeaderTimeout
	if readHeaderTimeout <= 0 {
		readHeaderTimeout = DefaultReadHeaderTimeout
	}
	writeTimeout := opts.WriteTimeout
	if writeTimeout <= 0 {
		writeTimeout = apiserver.DefaultWriteTimeout
	}
	// No ReadTimeout or WriteTimeout: they would bound whole requests,
	// watches included. Bodies are read within the request timeout and
	// responses bounded write by write (apiserver.Options.WriteTimeout).
	s.http = &http.Server{
		Handler:           s.api,
		TLSConfig:         bundle.TLSConfig.Clone(),
		ReadHeaderTimeout: readHeaderTimeout, // also bounds the TLS handshake
		MaxHeaderBytes:    1 << 20,
		BaseContext:       func(net.Listener) context.Context { return runCtx },
		ErrorLog:          serverErrorLog(klog.FromContext(ctx)),
		IdleTimeout:       90 * time.Second, // http.DefaultTransport's keep-alive
		HTTP2:             http2Config(opts.HTTP2MaxStreamsPerConnection, writeTimeout),
	}
	s.wg.Go(func() {
		if err := s.http.ServeTLS(batchconn.NewListener(ln, batchconn.Options{}), "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.fail(fmt.Errorf("serve HTTPS on %s: %w", ln.Addr(), err))
		}
	})

	addr := ln.Addr().(*net.TCPAddr)
	connectHost := host
	if addr.IP.IsUnspecified() {
		connectHost = "127.0.0.1"
	}
	s.url = "https://" + net.JoinHostPort(connectHost, strconv.Itoa(addr.Port))
	kc := kubeconfig.Options{Server: s.url, CAData: bundle.CAPEM, Token: token}
	if s.restConfig, err = kubeconfig.RESTConfig(kc); err != nil {
		return nil, err
	}
	// In-process clients talk to their own server: client-go's default
	// limit of 5 requests a second would only slow tests down.
	s.restConfig.QPS = -1
	if s.kubeconfigPath = opts.KubeconfigPath; s.kubeconfigPath == "" {
		s.kubeconfigPath = filepath.Join(s.dataDir, "kubeconfig")
	}
	if err := kubeconfig.Write(s.kubeconfigPath, kc); err != nil {
		return nil, err
	}
	if err := s.waitReady(ctx, opts.ReadyTimeout); err != nil {
		return nil, err
	}
	if err := s.startCRDController(runCtx); err != nil {
		return nil, err
	}
	crds := slices.Clone(opts.CRDs)
	fromFiles, err := readCRDFiles(s.scheme, opts.CRDPaths)
	if err != nil {
		return nil, err
	}
	crdCtx, cancelCRDs := context.WithTimeout(ctx, cmp.Or(opts.ReadyTimeout, 60*time.Second))
	defer cancelCRDs()
	if err := s.installCRDs(crdCtx, append(crds, fromFiles...)); err != nil {
		return nil, err
	}
	if err := s.startControllers(runCtx, opts); err != nil {
		return nil, err
	}
	return s, nil
}

// servingHosts are the serving certificate's SANs besides the loopback
// ones: ExtraSANs, and the bind address when it is one address (as
// kube-apiserver's certificate names its advertise address), so that a
// client on another host that dials it can verify the server.
func servingHosts(opts Options) []string {
	hosts := slices.Clone(opts.ExtraSANs)
	if ip := net.ParseIP(opts.BindAddress); ip != nil && !ip.IsUnspecified() {
		hosts = append(hosts, ip.String())
	}
	return hosts
}

// waitReady returns once every watch cache has filled (what /readyz
// checks), so that the first requests of a caller are served from memory.
func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		err := s.checkStorage(nil)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("storage not ready after %s: %w", timeout, err)
		case <-t.C:
		}
	}
}

// startControllers runs the controllers opts names, as clients of the
// API just started.
func (s *Server) startControllers(ctx context.Context, opts Options) error {
	names := opts.Controllers
	if names == nil {
		names = controllers.EmbeddedDefault()
	}
	m, err := controllers.New(controllers.Options{
		Config:                   s.RESTConfig(),
		Names:                    names,
		NodeMonitorGracePeriod:   opts.NodeMonitorGracePeriod,
		TerminatedPodGCThreshold: opts.TerminatedPodGCThreshold,
	})
	if err != nil {
		return err
	}
	s.ctrl = m
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	s.stopControllers = func() { cancel(); <-done }
	return nil
}

// startCRDController runs the controller that names, establishes and
// cleans up CRDs, whatever Options.Controllers says: CRDs are part of
// serving the API, as upstream runs these controllers inside
// kube-apiserver.
func (s *Server) startCRDController(ctx context.Context) error {
	cfg := s.RESTConfig()
	cfg.UserAgent = "kite-crd-controller"
	// CRDs are large objects (their schemas): protobuf is cheaper to
	// encode and decode than JSON on both sides, as kube-apiserver's
	// in-process clients use it.
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("CRD controller: client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("CRD controller: dynamic client: %w", err)
	}
	c, err := crd.New(crd.Options{Client: client, Dynamic: dyn, Unserved: s.crdInstaller})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	s.stopCRDController = func() { cancel(); <-done }
	return nil
}

// Controllers are the controllers the server runs: a test waits for them
// with WaitIdle.
func (s *Server) Controllers() *controllers.Manager { return s.ctrl }

// RESTConfig returns a client configuration for the admin user, without
// client-side rate limiting. Each call returns a new copy.
func (s *Server) RESTConfig() *rest.Config { return rest.CopyConfig(s.restConfig) }

// AgentCertificate issues a serving certificate from the cluster's CA for
// an agent reached at hosts (the agent kite server runs beside the API).
func (s *Server) AgentCertificate(nodeName string, hosts ...string) (tls.Certificate, error) {
	return s.bundle.Issue(pki.IssueOptions{CommonName: "system:node:" + nodeName, Hosts: hosts})
}

// URL is the API's HTTPS URL.
func (s *Server) URL() string { return s.url }

// KubeconfigPath is where the admin kubeconfig was written.
func (s *Server) KubeconfigPath() string { return s.kubeconfigPath }

// EtcdClient is the client of the etcd the server stores into, owned by
// the Server (do not close it): for tools and tests that need to look
// under the API, e.g. to compact history.
func (s *Server) EtcdClient() *clientv3.Client { return s.etcd.Client() }

// DataDir is the data directory in use.
func (s *Server) DataDir() string { return s.dataDir }

// Err reports a fatal error of a background part (the HTTPS server, the
// embedded etcd) after Start returned.
func (s *Server) Err() <-chan error { return s.errc }

func (s *Server) fail(err error) {
	select {
	case s.errc <- err:
	default:
	}
}

// Close stops the API (ending open watches), the background loops and
// etcd, and removes a temporary data directory. It is safe to call more
// than once.
func (s *Server) Close() error {
	s.once.Do(func() {
		if s.stopControllers != nil {
			s.stopControllers()
		}
		if s.stopCRDController != nil {
			s.stopCRDController()
		}
		if s.api != nil {
			s.api.ShutDown()
		}
		if s.cancel != nil {
			s.cancel()
		}
		if s.http != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := s.http.Shutdown(ctx); err != nil {
				s.http.Close()
			}
			cancel()
		}
		s.wg.Wait()
		if s.nodeProxy != nil {
			s.nodeProxy.Close()
		}
		if s.resources != nil {
			s.resources.stopAll()
		}
		if s.etcd != nil && s.ownEtcd {
			s.etcd.Close()
		}
		if s.removeDataDir {
			s.closeErr = os.RemoveAll(s.dataDir)
		}
	})
	return s.closeErr
}

// ensureNamespaces creates the namespaces that exist from the start.
func (s *Server) ensureNamespaces(ctx context.Context) error {
	ns := s.resources.store("namespaces")
	for _, name := range builtin.ImmortalNamespaces {
		obj := ns.Strategy().New()
		obj.(metav1.Object).SetName(name)
		_, err := ns.Create(ctx, "", obj, &metav1.CreateOptions{FieldManager: "kite"})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", name, err)
		}
	}
	return nil
}

func (s *Server) checkEtcd(r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	_, err := s.etcd.Client().Get(ctx, "health")
	return err
}

func (s *Server) checkStorage(*http.Request) error {
	for _, st := range s.resources.stores() {
		if st.Storage() == nil {
			continue // a virtual resource
		}
		if err := st.Storage().ReadinessCheck(); err != nil {
			return fmt.Errorf("%s: %w", st.Strategy().GroupResource(), err)
		}
	}
	return nil
}

// tableFunc adapts the table package to the API server. Custom resources
// (unstructured objects, which carry their kind) get their CRD's columns.
func tableFunc(scheme *k8sruntime.Scheme, columns func(schema.GroupVersionKind) *table.Columns) apiserver.TableFunc {
	tc := table.New(table.Options{Typer: scheme})
	return func(obj k8sruntime.Object, include metav1.IncludeObjectPolicy, noHeaders bool, gv schema.GroupVersion) (*metav1.Table, error) {
		opts := table.ConvertOptions{IncludeObject: include, NoHeaders: noHeaders, GroupVersion: gv}
		switch obj.(type) {
		case *unstructured.Unstructured, *unstructured.UnstructuredList:
			opts.Columns = columns(obj.GetObjectKind().GroupVersionKind())
		}
		return tc.Convert(obj, opts)
	}
}

// openAPIResource describes one strategy to the OpenAPI documents, with
// the verbs routing and discovery use.
func openAPIResource(strat *registry.Strategy) openapi.Resource {
	r := openapi.Resource{GVK: strat.Kind, Plural: strat.Resource, Namespaced: strat.Namespaced, Verbs: strat.Verbs(), Object: strat.New()}
	if strat.Virtual == nil {
		r.List = strat.NewList()
	}
	for name, sub := range strat.Subresources {
		os := openapi.Subresource{Name: name, Verbs: sub.Verbs()}
		if sub.Create != nil || sub.View != nil {
			// A subresource of a kind of its own (binding, scale).
			os.Object, os.GVK = sub.New(), sub.Kind
		}
		r.Subresources = append(r.Subresources, os)
	}
	return r
}
