package kite

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/apis/rbac/bootstrappolicy"
	"github.com/kite-project/kite/apiserver"
	"github.com/kite-project/kite/apiserver/aggregator"
	"github.com/kite-project/kite/apiserver/authz"
	"github.com/kite-project/kite/apiserver/flowcontrol"
	"github.com/kite-project/kite/apiserver/metrics"
	"github.com/kite-project/kite/apiserver/metricsapi"
	"github.com/kite-project/kite/apiserver/nodeproxy"
	"github.com/kite-project/kite/apiserver/openapi"
	"github.com/kite-project/kite/batchconn"
	"github.com/kite-project/kite/controllers"
	"github.com/kite-project/kite/crdserving"
	"github.com/kite-project/kite/kubeconfig"
	"github.com/kite-project/kite/listwatch"
	"github.com/kite-project/kite/pki"
	"github.com/kite-project/kite/registry/builtin"
	"github.com/kite-project/kite/resourceset"
	"github.com/kite-project/kite/storage/etcd"
	"github.com/kite-project/kite/storage/etcd/backend"
	"github.com/kite-project/kite/storage/etcd/embedded"
	kiteversion "github.com/kite-project/kite/version"
)

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
	webhooks       WebhookInstallOptions // as installed (Options.Webhooks)
	removeDataDir  bool

	metrics *metrics.Metrics
	etcd    *backend.Backend
	ownEtcd bool // opened by Start, closed by Close
	http    *http.Server
	api     *apiserver.Server
	// resources owns the served resources' storage stacks.
	resources *resourceset.Set
	// crds serves the custom resources of the CRD objects in resources
	// and runs the CRD controller.
	crds *crdserving.Serving
	ctrl *controllers.Manager
	// services allocates Services' cluster IPs and node ports.
	services *builtin.ServiceAllocation
	bundle   *pki.Bundle
	// authz authorizes every request; policy is the bootstrap policy it
	// starts from.
	authz  *authz.Authorizer
	policy *future[*bootstrappolicy.Policy]
	// rbacWritten is the reconciliation of the bootstrap policy, running
	// since startAuthorization: the resourceVersions it wrote.
	rbacWritten *future[map[string]uint64]
	// openAPI is the OpenAPI documents of the built-in resources, built
	// while the start writes its first objects.
	openAPI *future[*openapi.Service]
	token   string // the admin's
	// auth authenticates requests and issues ServiceAccount tokens
	// (authn.go).
	auth authentication
	// aggregator proxies the group versions of extension API servers;
	// frontProxyCA vouches for its client certificate (aggregation.go).
	aggregator   *aggregator.Aggregator
	frontProxyCA []byte
	// metricsAPI serves metrics.k8s.io from the agents' summaries.
	metricsAPI *metricsapi.API
	// apf is API priority and fairness, unless off (flowcontrol.go).
	apf *flowcontrol.Controller
	// stopControllers ends the controllers and waits for them: Close
	// calls it first, so that they never see the API go away.
	stopControllers func()
	// clusterDNS is the cluster DNS server (clusterdns.go), if it runs.
	clusterDNS clusterDNS
	// nodeProxy carries pods/log, exec, attach and portforward to agents;
	// Close closes its connections.
	nodeProxy *nodeproxy.Proxy
	runCtx    context.Context    // lives until Close: stacks built while serving run under it
	cancel    context.CancelFunc // ends background loops and open requests
	wg        sync.WaitGroup     // background loops
	errc      chan error
	closeErr  error
	once      sync.Once
	// startTrace is Start's steps and their durations (StartTrace).
	startTrace []StartStep
	// hooks are the start's steps /readyz waits for (startup.go).
	hooks postStartHooks
}

// Start runs a control plane and returns once the API answers. ctx bounds
// the start only; the Server runs until Close.
func Start(ctx context.Context, opts Options) (_ *Server, err error) {
	if err := pki.CheckHosts(opts.ExtraSANs); err != nil {
		return nil, fmt.Errorf("ExtraSANs: %w", err)
	}
	s := &Server{errc: make(chan error, 1), hooks: newPostStartHooks()}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	s.runCtx, s.cancel = context.WithCancel(context.Background())
	s.policy = startFuture(bootstrappolicy.Load)
	for _, step := range []struct {
		name string
		run  func() error
	}{
		{"openDataDir", func() error { return s.openDataDir(opts) }},
		// etcd's start is mostly waiting: the certificates are made meanwhile.
		{"openEtcd+ensureCertificates", func() error {
			return parallel(func() error { return s.openEtcd(ctx, opts) }, func() error { return s.ensureCertificates(opts) })
		}},
		{"newAuthentication", func() error { return s.newAuthentication(opts) }},
		{"buildResources", func() error { return s.buildResources(opts) }},
		{"startOpenAPI", func() error { s.startOpenAPI(opts); return nil }},
		// The bootstrap RBAC policy needs only the stores and the
		// authorizer's caches: it is written from here on, meanwhile.
		{"newAuthorizer+startAuthorization", func() error {
			if err := s.newAuthorizer(opts); err != nil {
				return err
			}
			s.startAuthorization(ctx, opts)
			return nil
		}},
		// Independent of each other: the allocators wait for the
		// Services' watch cache, the others write to etcd meanwhile.
		{"allocateServices+EnsureNamespaces+EnsureStartupObjects", func() error {
			return parallel(func() error { return s.allocateServices(ctx, opts) },
				func() error { return s.resources.EnsureNamespaces(ctx) },
				func() error { return s.resources.EnsureStartupObjects(ctx) })
		}},
		{"newAPI", func() error { return s.newAPI(opts) }},
		{"serveHTTPS", func() error { return s.serveHTTPS(ctx, opts) }},
		{"ensureKubernetesService", func() error { return s.ensureKubernetesService(ctx, opts) }},
		{"writeKubeconfig", func() error { return s.writeKubeconfig(opts) }},
		{"startFlowControl", func() error { return s.startFlowControl() }},
		{"WaitReady", func() error { return s.resources.WaitReady(ctx, opts.ReadyTimeout) }},
		{"ensureAuthorization", func() error { return s.ensureAuthorization(ctx, opts) }},
		{"ensureExtensionAuthentication", func() error { return s.ensureExtensionAuthentication(ctx) }},
		{"startCRDController", func() error { return s.startCRDController() }},
		{"installCRDs", func() error { return s.installCRDs(ctx, opts) }},
		{"installWebhooks", func() error { return s.installWebhooks(ctx, opts) }},
		{"startControllers", func() error { return s.startControllers(opts) }},
		{"startClusterDNS", func() error { return s.startClusterDNS(ctx, opts) }},
		{"waitPostStartHooks", func() error { return s.waitPostStartHooks(ctx, opts.ReadyTimeout) }},
	} {
		begin := time.Now()
		if err := step.run(); err != nil {
			return nil, err
		}
		s.startTrace = append(s.startTrace, StartStep{Name: step.name, Duration: time.Since(begin)})
	}
	klog.FromContext(ctx).V(2).Info("Started", "steps", s.startTrace)
	return s, nil
}

// StartStep is one step of Start and how long it took: where a start's
// time goes (docs/startup.md), for benchmarks and the log (-v=2).
type StartStep struct {
	Name     string
	Duration time.Duration
}

func (st StartStep) String() string {
	return st.Name + "=" + st.Duration.Round(10*time.Microsecond).String()
}

// StartTrace is the steps of Start in order, with their durations.
func (s *Server) StartTrace() []StartStep { return slices.Clone(s.startTrace) }

// openDataDir makes the data directory, a temporary one unless
// opts.DataDir names it.
func (s *Server) openDataDir(opts Options) (err error) {
	if s.dataDir = opts.DataDir; s.dataDir == "" {
		if s.dataDir, err = os.MkdirTemp("", "kite-"); err != nil {
			return fmt.Errorf("create a temporary data directory: %w", err)
		}
		s.removeDataDir = true
	}
	if err := os.MkdirAll(s.dataDir, 0o700); err != nil {
		return fmt.Errorf("create data directory %s: %w", s.dataDir, err)
	}
	return nil
}

// openEtcd opens etcd (unless the caller gave one) and fails the server
// when it fails.
func (s *Server) openEtcd(ctx context.Context, opts Options) (err error) {
	if s.etcd = opts.Backend; s.etcd == nil {
		s.etcd, err = backend.Open(ctx, backend.Options{
			External: backend.ExternalOptions{Servers: opts.EtcdServers},
			Embedded: embedded.Options{DataDir: s.dataDir, UnsafeNoFsync: opts.EtcdUnsafeNoFsync, LogLevel: opts.EtcdLogLevel},
		})
		if err != nil {
			return fmt.Errorf("open etcd: %w", err)
		}
		s.ownEtcd = true
	}
	if errc := s.etcd.Err(); errc != nil {
		s.wg.Go(func() {
			select {
			case err := <-errc:
				s.fail(fmt.Errorf("etcd: %w", err))
			case <-s.runCtx.Done():
			}
		})
	}
	return nil
}

// buildResources builds the stacks of the built-in resources (and runs
// the compactor, unless the caller runs one, and the object counts), and
// what serves custom resources while serving.
func (s *Server) buildResources(opts Options) (err error) {
	s.metrics = metrics.New(metrics.Options{RuntimeMetrics: true})
	var compactor etcd.CompactRevisioner = opts.Compactor
	if opts.Compactor == nil {
		c := etcd.NewCompactor(etcd.CompactorOptions{Client: s.etcd.Client(), Interval: opts.EtcdCompactionInterval})
		s.wg.Go(func() { c.Run(s.runCtx) })
		compactor = c
	}
	s.resources, err = resourceset.New(s.runCtx, resourceset.Options{
		Etcd:              s.etcd.Client(),
		Compactor:         compactor,
		Metrics:           s.metrics,
		WatchCacheSizes:   opts.WatchCacheSizes,
		DisableWatchCache: opts.DisableWatchCache,
		WrapStorage:       opts.WrapStorage,
		Admission:         builtin.AdmissionConfig{Enable: opts.EnableAdmissionPlugins, Disable: opts.DisableAdmissionPlugins},
		Authentication:    s.auth.hooks(),
		Authorizer:        s.policyAuthorizer,
		ComponentStatuses: s.componentChecks(opts),
	})
	if err != nil {
		return err
	}
	s.wg.Go(func() { s.resources.CountObjects(s.runCtx, s.metrics, time.Minute) })
	s.crds, err = crdserving.New(s.runCtx, s.resources)
	return err
}

// ensureCertificates makes (or reads) the CA, the serving certificate and
// the admin token in the data directory.
func (s *Server) ensureCertificates(opts Options) (err error) {
	if s.bundle, err = pki.Ensure(filepath.Join(s.dataDir, "pki"), pki.Options{Hosts: servingHosts(opts)}); err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	if s.token, err = pki.EnsureToken(filepath.Join(s.dataDir, "pki", pki.TokenFile)); err != nil {
		return fmt.Errorf("admin token: %w", err)
	}
	return nil
}

// newAPI makes the API server of the resources, with its OpenAPI
// documents and its proxy to agents, and starts following the CRDs.
func (s *Server) newAPI(opts Options) error {
	if err := s.newAuthenticator(opts); err != nil {
		return err
	}
	v := serverVersion(opts)
	oa, err := s.openAPI.get()
	if err != nil {
		return fmt.Errorf("openapi: %w", err)
	}
	if err := s.resources.EnableScaleApply(oa); err != nil {
		return err
	}
	kubeletClient, err := s.bundle.Issue(pki.IssueOptions{CommonName: pki.KubeletClientCommonName, Client: true})
	if err != nil {
		return fmt.Errorf("client certificate for agents: %w", err)
	}
	kubeletCAs, requireKubeletCA, err := s.kubeletCAs(opts.Authentication)
	if err != nil {
		return err
	}
	s.nodeProxy, err = nodeproxy.New(nodeproxy.Options{Pods: s.resources.Store("pods"), Nodes: s.resources.Store("nodes"), ClientCertificate: kubeletClient, KubeletCAs: kubeletCAs, RequireKubeletCA: requireKubeletCA})
	if err != nil {
		return err
	}
	s.nodeProxy.ServeServices(s.resources.Store("services"), s.resources.Store("endpointslices.discovery.k8s.io"))
	if err := s.newAggregator(); err != nil {
		return err
	}
	if err := s.newMetricsAPI(opts); err != nil {
		return err
	}
	if err := s.newFlowControl(opts); err != nil {
		return err
	}
	extra := map[string]http.Handler{"/openapi/": oa}
	for path, h := range s.auth.handlers {
		extra[path] = h
	}
	if opts.Profiling {
		extra["/debug/pprof/"] = apiserver.Profiles()
	}
	if s.apf != nil {
		extra[flowcontrol.DebugPrefix] = s.apf.DebugHandler()
	}
	s.api, err = apiserver.New(apiserver.Options{
		Extra:         extra,
		Stores:        s.resources.Stores(),
		Scheme:        s.resources.Scheme(),
		Version:       v,
		Authenticator: s.auth.authenticator,
		Authorizer:    s.authz,
		FlowControl:   s.flowControlFilter(),
		Connect:       s.nodeProxy,
		Remote:        remotes{s.aggregator, s.metricsAPI},
		Checks:        []apiserver.HealthCheck{{Name: "etcd", Check: s.checkEtcd}},
		ReadyChecks:   append([]apiserver.HealthCheck{{Name: "storage", Check: s.resources.ReadinessCheck}}, s.hooks.checks()...),
		Tables:        s.crds.Tables(),
		Metrics:       s.metrics,

		MinRequestTimeout:           opts.MinRequestTimeout,
		MaxRequestsInFlight:         opts.MaxRequestsInFlight,
		MaxMutatingRequestsInFlight: opts.MaxMutatingRequestsInFlight,
		WriteTimeout:                opts.WriteTimeout,
	})
	if err != nil {
		return err
	}
	s.resources.Serve(s.api, oa)
	// Only now: what the follower installs must reach the API server.
	s.wg.Go(func() { s.crds.Run(s.runCtx) })
	return nil
}

// serverVersion is the version the server reports.
func serverVersion(opts Options) version.Info {
	if opts.Version == (version.Info{}) {
		return DefaultVersion()
	}
	return opts.Version
}

// startOpenAPI starts building the OpenAPI documents of the resources
// built so far (newAPI takes them).
func (s *Server) startOpenAPI(opts Options) {
	resources, v := s.resources.OpenAPIResources(), serverVersion(opts).GitVersion
	s.openAPI = startFuture(func() (*openapi.Service, error) {
		return openapi.New(openapi.Options{Resources: resources, Version: v})
	})
}

// newAuthorizer builds the authorizer of opts.AuthorizationMode over the
// served RBAC objects and pods, and starts filling its caches.
func (s *Server) newAuthorizer(opts Options) (err error) {
	modes, err := authz.ParseModes(opts.AuthorizationMode)
	if err != nil {
		return fmt.Errorf("AuthorizationMode: %w", err)
	}
	policy, err := s.policy.get()
	if err != nil {
		return err
	}
	var nodeRules []rbacv1.PolicyRule
	if r, ok := policy.ClusterRole(bootstrappolicy.NodeName); ok {
		nodeRules = r.Rules
	}
	lw := func(gr string) listwatch.ListerWatcher { return resourceset.StoreListerWatcher(s.resources.Store(gr)) }
	s.authz, err = authz.New(authz.Options{
		Modes: modes,
		Sources: authz.Sources{
			Roles:               lw("roles.rbac.authorization.k8s.io"),
			ClusterRoles:        lw("clusterroles.rbac.authorization.k8s.io"),
			RoleBindings:        lw("rolebindings.rbac.authorization.k8s.io"),
			ClusterRoleBindings: lw("clusterrolebindings.rbac.authorization.k8s.io"),
			Pods:                lw("pods"),
		},
		NodeRules: nodeRules,
	})
	if err != nil {
		return err
	}
	s.wg.Go(func() { s.authz.Run(s.runCtx) })
	return nil
}

// startAuthorization starts reconciling the bootstrap policy, as
// kube-apiserver's rbac/bootstrap-roles PostStartHook, on a goroutine of
// its own: it writes in process, so it needs neither the API server nor
// the namespaces' step (it makes the namespaces it writes into), and its
// ~150 creates on a fresh data directory overlap the steps before
// ensureAuthorization rather than following them. It ends with Start's
// ctx, the ready timeout or Close.
func (s *Server) startAuthorization(ctx context.Context, opts Options) {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(opts.ReadyTimeout, 60*time.Second))
	stop := context.AfterFunc(s.runCtx, cancel)
	s.rbacWritten = &future[map[string]uint64]{done: make(chan struct{})}
	s.wg.Go(func() {
		defer close(s.rbacWritten.done)
		defer stop()
		defer cancel()
		s.rbacWritten.v, s.rbacWritten.err = s.reconcileAuthorization(ctx)
	})
}

// reconcileAuthorization waits for the authorizer's caches and reconciles
// the bootstrap policy; it returns the resourceVersions it wrote, by
// resource.
func (s *Server) reconcileAuthorization(ctx context.Context) (map[string]uint64, error) {
	if err := s.authz.WaitSynced(ctx); err != nil {
		return nil, err
	}
	policy, err := s.policy.get()
	if err != nil {
		return nil, err
	}
	// The authorizer's caches are synced: the watch caches they fill from
	// hold every object written before, so the reconciler reads them
	// there, and writes what is missing or out of date in process
	// (registryModifiers): no object costs a request.
	modifiers, written := registryModifiers(withLoopbackUser(ctx), s.resources)
	if err := authz.EnsureBootstrapPolicyWith(ctx, modifiers, policy); err != nil {
		return nil, fmt.Errorf("bootstrap RBAC policy: %w", err)
	}
	return written.get(), nil
}

// ensureAuthorization waits for the reconciliation of the bootstrap
// policy (startAuthorization) before Start goes on: clients then find the
// default roles and bindings, and are authorized by them.
func (s *Server) ensureAuthorization(ctx context.Context, opts Options) error {
	written, err := s.rbacWritten.get()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(opts.ReadyTimeout, 60*time.Second))
	defer cancel()
	// The writes were in process and quick: the authorizer's caches hear
	// of them a moment later. Controllers start next, as their own users,
	// and must find the policy that lets them in (else every informer's
	// first list is forbidden and backs off).
	if err := s.authz.WaitFor(ctx, written); err != nil {
		return fmt.Errorf("bootstrap RBAC policy: %w", err)
	}
	s.hooks.rbac.finish()
	return nil
}

// serveHTTPS listens on the bind address and serves the API over HTTPS
// until Close.
func (s *Server) serveHTTPS(ctx context.Context, opts Options) error {
	host := cmp.Or(opts.BindAddress, "127.0.0.1")
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(opts.SecurePort)))
	if err != nil {
		return fmt.Errorf("listen on %s:%d: %w", host, opts.SecurePort, err)
	}
	readHeaderTimeout := opts.ReadHeaderTimeout
	if readHeaderTimeout <= 0 {
		readHeaderTimeout = DefaultReadHeaderTimeout
	}
	maxStreams := opts.HTTP2MaxStreamsPerConnection
	if maxStreams <= 0 {
		maxStreams = DefaultHTTP2MaxStreamsPerConnection
	}
	s.http = apiserver.NewHTTPSServer(s.api, apiserver.HTTPSOptions{
		TLSConfig:               s.auth.serving(s.bundle.TLSConfig),
		ReadHeaderTimeout:       readHeaderTimeout,
		WriteTimeout:            opts.WriteTimeout,
		MaxStreamsPerConnection: maxStreams,
		Context:                 s.runCtx,
		Logger:                  klog.FromContext(ctx),
	})
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
	return nil
}

// writeKubeconfig writes the admin kubeconfig and keeps its client
// configuration.
func (s *Server) writeKubeconfig(opts Options) (err error) {
	kc := kubeconfig.Options{Server: s.url, CAData: s.bundle.CAPEM, Token: s.token}
	if s.restConfig, err = kubeconfig.RESTConfig(kc); err != nil {
		return err
	}
	// In-process clients talk to their own server: client-go's default
	// limit of 5 requests a second would only slow tests down.
	s.restConfig.QPS = -1
	if s.kubeconfigPath = opts.KubeconfigPath; s.kubeconfigPath == "" {
		s.kubeconfigPath = filepath.Join(s.dataDir, "kubeconfig")
	}
	return kubeconfig.Write(s.kubeconfigPath, kc)
}

// installCRDs installs opts' CRDs, objects and files, within the ready
// timeout.
func (s *Server) installCRDs(ctx context.Context, opts Options) error {
	crds := slices.Clone(opts.CRDs)
	fromFiles, err := crdserving.ReadFiles(s.resources.Scheme(), opts.CRDPaths)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(opts.ReadyTimeout, 60*time.Second))
	defer cancel()
	return s.crds.Ensure(ctx, append(crds, fromFiles...))
}

// servingHosts are the serving certificate's SANs besides the loopback
// ones: ExtraSANs, the `kubernetes` Service's names and cluster IPs
// (pods' in-cluster clients), and the bind address when it is one address (as
// kube-apiserver's certificate names its advertise address), so that a
// client on another host that dials it can verify the server.
func servingHosts(opts Options) []string {
	hosts := append(slices.Clone(opts.ExtraSANs), kubernetesServiceHosts(opts)...)
	if ip := net.ParseIP(opts.BindAddress); ip != nil && !ip.IsUnspecified() {
		hosts = append(hosts, ip.String())
	}
	return hosts
}

// startControllers runs the controllers opts names, as clients of the
// API just started.
func (s *Server) startControllers(opts Options) error {
	names := opts.Controllers
	if names == nil {
		names = controllers.EmbeddedDefault()
	}
	o := controllers.Options{
		Config:                   s.RESTConfig(),
		Names:                    names,
		NodeMonitorGracePeriod:   opts.NodeMonitorGracePeriod,
		TerminatedPodGCThreshold: opts.TerminatedPodGCThreshold,
		NodeIPAM:                 s.nodeIPAMOptions(opts),
		// The CSR signer signs with the cluster CA, as kubeadm points
		// kube-controller-manager's --cluster-signing-* at it.
		ClusterSigningCertFile: filepath.Join(s.dataDir, "pki", pki.CACertFile),
		ClusterSigningKeyFile:  filepath.Join(s.dataDir, "pki", pki.CAKeyFile),
	}
	if err := s.withComponentIdentities(&o); err != nil {
		return err
	}
	m, err := controllers.New(o)
	if err != nil {
		return err
	}
	s.ctrl = m
	ctx, cancel := context.WithCancel(s.runCtx)
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	s.stopControllers = func() { cancel(); <-done }
	return nil
}

// Controllers are the controllers the server runs: a test waits for them
// with WaitIdle.
func (s *Server) Controllers() *controllers.Manager { return s.ctrl }

// Resources is the set of served resources and their storage stacks,
// owned by the Server: for tools and tests that look under the HTTP API
// (as EtcdClient does under the storage), e.g. to write many objects in
// process or to change the set while serving.
func (s *Server) Resources() *resourceset.Set { return s.resources }

// CustomResources is what serves the custom resources of the CRDs, owned
// by the Server: for tools and tests that look under the HTTP API.
func (s *Server) CustomResources() *crdserving.Serving { return s.crds }

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
		s.stopClusterDNS()
		if s.crds != nil {
			s.crds.StopController()
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
			s.resources.StopAll()
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

func (s *Server) checkEtcd(r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	_, err := s.etcd.Client().Get(ctx, "health")
	return err
}
