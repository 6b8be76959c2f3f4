// Package agent is the node agent, the kubelet's job for one node, in one
// value: agent.New(Options) builds it and Run runs it. It assembles the
// configured pod sources (file, http, api) feeding one config.PodConfig,
// the mirror pods of static pods (package mirror), the registration and
// status of the Node, and the sync loop that consumes the merge's
// operations (the pod manager, or a SyncLoop of the caller's), as
// upstream's kubelet does in
// makePodSourceConfig, its mirror pod handling and syncLoop.
//
// Mirror pods come back through the api source like any pod bound to the
// node. The Agent recognises them by their kubernetes.io/config.mirror
// annotation, gives them to the mirror reconciler as the API's state, and
// keeps them from the consumer: a mirror pod is never run, and deleting one
// through the API never stops its static pod (the reconciler creates it
// again).
//
// Without a REST config the agent is standalone: static pods only, no
// mirror pods.
package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	nethttp "net/http"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/agent/config"
	"github.com/kite-project/kite/agent/imagegc"
	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/agent/mirror"
	"github.com/kite-project/kite/agent/node"
	"github.com/kite-project/kite/agent/nodeevents"
	"github.com/kite-project/kite/agent/options"
	"github.com/kite-project/kite/agent/podsync"
	"github.com/kite-project/kite/agent/proxy"
	"github.com/kite-project/kite/agent/runtime"
	"github.com/kite-project/kite/agent/server"
	"github.com/kite-project/kite/agent/source/api"
	"github.com/kite-project/kite/agent/source/file"
	"github.com/kite-project/kite/agent/source/http"
	kiteversion "github.com/kite-project/kite/version"
)

// Client defaults, the kubelet's (kubeAPIQPS, kubeAPIBurst, contentType,
// eventRecordQPS, eventBurst).
const (
	DefaultQPS         = 50
	DefaultBurst       = 100
	DefaultContentType = "application/vnd.kubernetes.protobuf"
	DefaultEventQPS    = 50
	DefaultEventBurst  = 100
)

// Options configures an Agent.
type Options struct {
	// NodeName is the node the agent runs as. Required.
	NodeName string
	// StaticPodPath (--pod-manifest-path) turns the file source on.
	StaticPodPath string
	// FileCheckFrequency is the file source's rescan period; zero is its
	// default.
	FileCheckFrequency time.Duration
	// StaticPodURL (--manifest-url) turns the http source on, with
	// StaticPodURLHeader sent with each request.
	StaticPodURL       string
	StaticPodURLHeader nethttp.Header
	// HTTPCheckFrequency is the http source's poll period; zero is its
	// default.
	HTTPCheckFrequency time.Duration
	// RESTConfig reaches the API server (--kubeconfig) and turns the api
	// source and mirror pods on; nil means standalone. Zero QPS, Burst and
	// ContentType take the kubelet's defaults. Events are written through
	// a client of their own, with its own rate limit (the kubelet's
	// eventRecordQPS and eventBurst when QPS is zero, else RESTConfig's),
	// so that they never hold back a pod's status, as upstream's
	// kubelet keeps its event client apart.
	RESTConfig *rest.Config
	// Reporter, if set, receives the problems sources and merge find.
	Reporter kubetypes.ProblemReporter
	// MirrorRetryInitial and MirrorRetryMax bound the mirror reconciler's
	// backoff after failed calls; zero means mirror's defaults.
	MirrorRetryInitial, MirrorRetryMax time.Duration
	// RootDir holds the agent's files (--root-dir): pod directories,
	// volumes, container logs and the runtime's state. Required to run
	// pods.
	RootDir string
	// Runtime runs the containers; nil means the built-in process runtime
	// (agent/runtime/process) with its state under RootDir/runtime.
	Runtime runtime.Service
	// ContainerRuntime picks the runtime when Runtime is nil: "process"
	// (or empty: the built-in process runtime) or "containerd" (a
	// containerd child the agent runs with its state under
	// RootDir/containerd, stopped when Run returns; docs/runtime.md).
	ContainerRuntime string
	// ContainerRuntimeEndpoint is the socket of a CRI runtime that runs
	// already (unix:///...); it wins over ContainerRuntime.
	ContainerRuntimeEndpoint string
	// CNIBinDir and CNIBridge configure the pod network of a containerd
	// the agent runs (podnetwork.go): where the CNI plugins are (empty:
	// agent/cni.BinDirs) and the bridge pods join (empty: kite0).
	CNIBinDir, CNIBridge string
	// PodRoutes is how such pods reach other nodes' pods (podnetwork.go):
	// "" or "host-gw" routes each other node's podCIDR through its
	// InternalIP and masquerades what pods send outside the pod network
	// (agent/routes); "none" does neither (a network that routes the
	// podCIDRs itself, or tests whose nodes share the host's network).
	PodRoutes string
	// CgroupDriver is the CRI runtime's cgroup driver ("cgroupfs" or
	// "systemd") for an endpoint; empty: systemd where systemd is the init.
	// A containerd the agent runs gets the one it was configured with.
	CgroupDriver string
	// CgroupRoot is the cgroup (cgroupfs form) under which a CRI runtime's
	// pods are, in their QoS tiers under its kubepods (--cgroup-root,
	// cri.Options.CgroupRoot): cri.DefaultCgroupRoot when empty.
	CgroupRoot string
	// ContainerLogMaxSize (bytes) and ContainerLogMaxFiles configure the
	// process runtime's log rotation; zero means its defaults.
	ContainerLogMaxSize  int64
	ContainerLogMaxFiles int
	// ImageGC is the image garbage collection policy of a CRI runtime
	// (agent/imagegc); nil is the kubelet's default.
	ImageGC *imagegc.Policy
	// PodPidsLimit is the pids.max of each pod's cgroup (--pod-max-pids)
	// under a CRI runtime, as the kubelet's pod container manager sets
	// it; 0 or less (the default -1) leaves it unlimited.
	PodPidsLimit int64
	// MaxParallelStarts bounds a CRI runtime's start calls in flight
	// (cri.Options.MaxParallelStarts): the runtime's default when zero,
	// no bound when negative.
	MaxParallelStarts int
	// SyncLoop consumes the operations; nil means the pod manager
	// (agent/podsync) that runs them on Runtime. LogSyncLoop runs no pods.
	SyncLoop SyncLoop
	// ServerAddress is the address the agent's HTTPS server (logs, exec,
	// port-forward) listens on, at Node.Port (0: a free port, which the Node
	// then reports); empty means every address,
	// as the kubelet's --address 0.0.0.0. The server runs when the agent
	// runs pods.
	ServerAddress string
	// ServerCertificate serves it; nil means a self-signed certificate
	// for the node's names (the API server does not verify it, as
	// kube-apiserver without --kubelet-certificate-authority).
	ServerCertificate *tls.Certificate
	// GetServerCertificate, if set, serves it while it has a certificate
	// (a joined node's kubelet-serving one, rotated without a restart),
	// ServerCertificate or the self-signed one before.
	GetServerCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// ServerClientCA is the CA (PEM) of the API server's client
	// certificate; empty: the REST config's CA (a REST config with its
	// own transport, as a joined node's with a rotated certificate, has
	// none).
	ServerClientCA []byte
	// ClusterDNS (--cluster-dns) and ClusterDomain (--cluster-domain)
	// configure the resolver of ClusterFirst pods (docs/dns.md).
	ClusterDNS    []string
	ClusterDomain string
	// Node configures the Node's registration, status and Lease (with a
	// REST config); its Client and NodeName are filled in by New.
	Node node.Options
	// ProxyMode is the service proxy: ProxyNFTables runs agent/proxy
	// (with a REST config), ProxyNone or empty runs none.
	ProxyMode string
	// Proxy configures the service proxy; its Client and NodeName are
	// filled in by New.
	Proxy proxy.Options
}

// SyncLoop is the sync loop: it consumes the merge's operations (mirror
// pods taken out) until updates is closed, which happens after ctx ends.
// sources tells which sources have reported, so that it stops pods no
// source has only once every source has been seen. (Not podworkers.Syncer,
// which does one pod's work for the pod manager.)
type SyncLoop interface {
	Run(ctx context.Context, updates <-chan kubetypes.PodUpdate, sources SourcesSeen)
}

// mirrorObserver is a sync loop that wants the mirror pods the api source
// sees, which are kept from its operations: the pod manager writes a
// static pod's status through its mirror.
type mirrorObserver interface {
	ObserveMirror(mirror *v1.Pod)
}

// SourcesSeen says which pod sources have sent their first snapshot.
type SourcesSeen interface {
	Seen(source string) bool
	SeenAllSources() bool
}

// FromOptions turns the command's options (flags and --config file, already
// completed) into Options, loading the kubeconfig file if one is given.
func FromOptions(o *options.Options) (Options, error) {
	name, err := o.NodeName()
	if err != nil {
		return Options{}, err
	}
	opts := Options{
		NodeName:             name,
		StaticPodPath:        o.Config.StaticPodPath,
		FileCheckFrequency:   o.Config.FileCheckFrequency.Duration,
		StaticPodURL:         o.Config.StaticPodURL,
		StaticPodURLHeader:   nethttp.Header(o.Config.StaticPodURLHeader),
		HTTPCheckFrequency:   o.Config.HTTPCheckFrequency.Duration,
		RootDir:              o.RootDir,
		ContainerLogMaxFiles: int(o.Config.ContainerLogMaxFiles),
		ImageGC: &imagegc.Policy{HighThresholdPercent: int(ptr.Deref(o.Config.ImageGCHighThresholdPercent, 85)),
			LowThresholdPercent: int(ptr.Deref(o.Config.ImageGCLowThresholdPercent, 80)), MinAge: o.Config.ImageMinimumGCAge.Duration},
		PodPidsLimit: ptr.Deref(o.Config.PodPidsLimit, -1),
		CgroupRoot:   o.Config.CgroupRoot,

		ClusterDNS:               o.Config.ClusterDNS,
		ClusterDomain:            o.Config.ClusterDomain,
		ContainerRuntime:         o.ContainerRuntime,
		ContainerRuntimeEndpoint: o.ContainerRuntimeEndpoint,
		ProxyMode:                ProxyModeFor(o),
		PodRoutes:                o.PodRoutes,
		CNIBinDir:                o.CNIBinDir,
		Node: node.Options{
			MaxPods: int64(o.Config.MaxPods),
			Port:    o.Config.Port,
			RootDir: o.RootDir,
			Labels:  o.NodeLabels,

			LeaseDurationSeconds:     o.Config.NodeLeaseDurationSeconds,
			PressureTransitionPeriod: o.Config.EvictionPressureTransitionPeriod.Duration,
		},
	}
	if o.NodeIP != "" {
		opts.Node.NodeIP = net.ParseIP(o.NodeIP)
	}
	if opts.Node.EvictionHard, err = node.ParseEvictionHard(o.Config.EvictionHardStatements()); err != nil {
		return Options{}, fmt.Errorf("evictionHard (--eviction-hard): %w", err)
	}
	size, err := resource.ParseQuantity(o.Config.ContainerLogMaxSize)
	if err != nil {
		return Options{}, fmt.Errorf("--container-log-max-size %q: %w", o.Config.ContainerLogMaxSize, err)
	}
	opts.ContainerLogMaxSize = size.Value()
	if o.KubeConfig != "" {
		if opts.RESTConfig, err = clientcmd.BuildConfigFromFlags("", o.KubeConfig); err != nil {
			return Options{}, fmt.Errorf("--kubeconfig %s: %w", o.KubeConfig, err)
		}
	}
	return opts, nil
}

// runner is a source, started with the merge's input channel.
type runner interface {
	Run(ctx context.Context, out chan<- kubetypes.PodUpdate)
}

// Agent is the pod pipeline of one node. Run it once; read Updates.
type Agent struct {
	opts      Options
	pc        *config.PodConfig
	sources   []runner
	static    []string // the configured static sources
	mirrors   *mirror.Reconciler
	events    *nodeevents.Recorder // nil when standalone
	updates   chan kubetypes.PodUpdate
	announced map[string]bool // sources whose first report the consumer got
	// Exactly one of pods and loop consumes the operations: the pod
	// manager, which a.updates reaches directly, or Options.SyncLoop.
	pods *podsync.Manager
	loop SyncLoop
	// observer is given the mirror pods, if the consumer wants them.
	observer mirrorObserver
	node     *node.Manager   // nil when standalone
	rt       runtime.Service // nil when it runs no pods
	// imageGC removes unused images of a CRI runtime; nil otherwise.
	imageGC *imagegc.Manager
	// closeRuntime closes the connection to a CRI runtime and stops the
	// containerd child, if any; nil for none.
	closeRuntime func()
	// podNet writes the CNI configuration of a containerd the agent runs
	// once the node has its podCIDR; nil for none.
	podNet   *podNetwork
	server   *server.Server // nil when it runs no pods
	proxy    *proxy.Proxy   // nil without a service proxy
	serverLn net.Listener
	served   podSet // the pods handed to the sync loop, for /pods
	// running guards against a second Run, which would start every part
	// twice.
	running atomic.Bool
}

// New builds the sources, the merge and, with a REST config, the mirror
// reconciler; Run starts them. A containerd child it starts runs until Run
// returns (or until New fails).
func New(opts Options) (_ *Agent, err error) {
	if opts.NodeName == "" {
		return nil, errors.New("agent: no node name given")
	}
	if opts.RootDir != "" {
		// Log paths and volume paths handed to the runtime are absolute.
		abs, err := filepath.Abs(opts.RootDir)
		if err != nil {
			return nil, fmt.Errorf("agent: root directory %s: %w", opts.RootDir, err)
		}
		opts.RootDir, opts.Node.RootDir = abs, abs
	}
	a := &Agent{opts: opts, updates: make(chan kubetypes.PodUpdate, config.UpdatesBuffer), announced: map[string]bool{}, loop: opts.SyncLoop}
	if _, logs := a.loop.(LogSyncLoop); logs && opts.Node.Health == nil {
		// An agent that runs no pods must not look able to.
		opts.Node.Health = func(context.Context) ([]string, []v1.NodeCondition) {
			return []string{"container runtime is down"}, nil
		}
	}
	var cs *kubernetes.Clientset
	if opts.RESTConfig != nil {
		var err error
		if cs, err = kubernetes.NewForConfig(clientConfig(opts.RESTConfig)); err != nil {
			return nil, fmt.Errorf("agent: API client: %w", err)
		}
		events, err := kubernetes.NewForConfig(eventClientConfig(opts.RESTConfig))
		if err != nil {
			return nil, fmt.Errorf("agent: API client for events: %w", err)
		}
		// Problems also become Warning events on the Node, as the
		// kubelet reports a bad manifest.
		if a.events, err = nodeevents.New(nodeevents.Options{Client: events.CoreV1(), NodeName: opts.NodeName}); err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
		opts.Reporter = bothReporters(opts.Reporter, a.events)
	}
	var names []string
	if opts.StaticPodPath != "" {
		s, err := file.New(file.Options{Path: opts.StaticPodPath, NodeName: opts.NodeName, CheckFrequency: opts.FileCheckFrequency, Reporter: opts.Reporter,
			StateDir: underRoot(opts.RootDir, "static-pod-manifests")})
		if err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
		a.sources = append(a.sources, s)
		names = append(names, kubetypes.FileSource)
		a.static = append(a.static, kubetypes.FileSource)
	}
	if opts.StaticPodURL != "" {
		s, err := http.New(http.Options{URL: opts.StaticPodURL, Header: opts.StaticPodURLHeader, NodeName: opts.NodeName, CheckFrequency: opts.HTTPCheckFrequency, Reporter: opts.Reporter})
		if err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
		a.sources = append(a.sources, s)
		names = append(names, kubetypes.HTTPSource)
		a.static = append(a.static, kubetypes.HTTPSource)
	}
	if cs != nil {
		s, err := api.New(api.Options{Client: cs.CoreV1().RESTClient(), NodeName: opts.NodeName})
		if err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
		a.sources = append(a.sources, s)
		names = append(names, kubetypes.APISource)
		if a.mirrors, err = mirror.New(mirror.Options{Client: cs.CoreV1(), NodeName: opts.NodeName,
			RetryInitial: opts.MirrorRetryInitial, RetryMax: opts.MirrorRetryMax}); err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
	}
	pc, err := config.New(config.Options{Sources: names, Reporter: opts.Reporter})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	a.pc = pc
	defer func() {
		if err != nil && a.closeRuntime != nil {
			a.closeRuntime()
		}
	}()
	if a.loop == nil {
		if a.pods, err = a.newPodManager(&opts, cs); err != nil {
			return nil, err
		}
		a.observer = a.pods
	} else if o, ok := a.loop.(mirrorObserver); ok {
		a.observer = o
	}
	if a.rt != nil {
		if err := a.newServer(&opts); err != nil {
			return nil, err
		}
	}
	if a.proxy, err = newProxy(opts, cs); err != nil {
		return nil, err
	}
	if cs != nil {
		nodeOpts := opts.Node
		nodeOpts.Client, nodeOpts.NodeName = cs, opts.NodeName
		if a.node, err = node.New(nodeOpts); err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
	}
	return a, nil
}

// clientConfig is cfg with the kubelet's client defaults where cfg has none.
func clientConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		cfg.QPS = DefaultQPS
	}
	if cfg.Burst == 0 {
		cfg.Burst = DefaultBurst
	}
	if cfg.ContentType == "" {
		cfg.ContentType = DefaultContentType
		cfg.AcceptContentTypes = DefaultContentType + ",application/json"
	}
	if cfg.UserAgent == "" {
		// The kubelet's user agent: the API server names the field
		// manager of the agent's writes (the Node, pod statuses) after
		// its first word, "kubelet", as against upstream.
		cfg.UserAgent = fmt.Sprintf("kubelet/%s (%s/%s) kite", kiteversion.GitVersion, goruntime.GOOS, goruntime.GOARCH)
	}
	return cfg
}

// eventClientConfig is clientConfig(cfg) for the events' client: with
// the kubelet's event limits where cfg sets none, and a rate limiter of
// its own unless cfg brings one.
func eventClientConfig(cfg *rest.Config) *rest.Config {
	limited := cfg.QPS == 0
	cfg = clientConfig(cfg)
	if limited {
		cfg.QPS, cfg.Burst = DefaultEventQPS, DefaultEventBurst
	}
	return cfg
}

// Seen says whether source has sent its first snapshot.
func (a *Agent) Seen(source string) bool { return a.pc.Seen(source) }

// SeenAllSources says whether every configured source has reported.
func (a *Agent) SeenAllSources() bool { return a.pc.SeenAllSources() }

// Run runs the agent until ctx ends: the sources, the merge and the
// sync loop, and with an API server the Node's registration, status and
// Lease (package node) and, once the Node is registered, the mirror
// reconciler (mirror pods are owned by the Node). An API server that is
// not up yet holds back nothing but the mirror pods. Run returns when all
// of them have stopped. An Agent runs once: a second Run returns at once.
func (a *Agent) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("node", a.opts.NodeName)
	if !a.running.CompareAndSwap(false, true) {
		logger.Error(nil, "Agent already ran; ignoring a second Run")
		return
	}
	ctx = klog.NewContext(ctx, logger)
	if a.closeRuntime != nil {
		defer a.closeRuntime() // after every part that uses it
	}
	var syncWG, wg sync.WaitGroup
	if a.pods != nil {
		syncWG.Go(func() { a.pods.Run(ctx, a.updates) })
	} else {
		syncWG.Go(func() { a.loop.Run(ctx, a.updates, a) })
	}
	defer syncWG.Wait()
	defer close(a.updates)
	defer wg.Wait()
	if a.node != nil {
		wg.Go(func() { a.node.Run(ctx) })
	}
	if a.server != nil {
		wg.Go(func() {
			if err := a.server.Serve(ctx, a.serverLn); err != nil {
				logger.Error(err, "Agent HTTPS server stopped", "address", a.serverLn.Addr())
			}
		})
	}
	wg.Go(func() { a.pc.Run(ctx) })
	if a.podNet != nil {
		wg.Go(func() { a.podNet.run(ctx) })
	}
	for _, s := range a.sources {
		wg.Go(func() { s.Run(ctx, a.pc.Input()) })
	}
	if a.mirrors != nil {
		wg.Go(func() {
			select {
			case <-ctx.Done():
				return
			case <-a.node.Registered():
			}
			a.mirrors.Run(ctx)
		})
	}
	if a.events != nil {
		wg.Go(func() { a.events.Run(ctx) })
	}
	if a.proxy != nil {
		wg.Go(func() { a.proxy.Run(ctx) })
	}
	if a.imageGC != nil {
		wg.Go(func() { a.imageGC.Run(ctx) })
	}
	a.forward(ctx)
}

// forward passes the merge's operations on to the consumer (the pod
// manager itself: one hop from the merge), taking the mirror pods out,
// giving the mirror reconciler and the status manager what they need, and
// logging each operation it passes in one line.
func (a *Agent) forward(ctx context.Context) {
	logger := klog.FromContext(ctx)
	v := newView()
	var apiSeen, staticSeen bool
	for {
		var u kubetypes.PodUpdate
		var ok bool
		select {
		case <-ctx.Done():
			return
		case u, ok = <-a.pc.Updates():
			if !ok {
				return
			}
		}
		if a.mirrors != nil {
			// A source's first report can change the decisions without
			// changing the pods (an api source reporting API pods only).
			changed := v.apply(u)
			nowAPI, nowStatic := a.pc.Seen(kubetypes.APISource), a.seenAll(a.static)
			if changed || nowAPI != apiSeen || nowStatic != staticSeen {
				apiSeen, staticSeen = nowAPI, nowStatic
				a.mirrors.Set(mirror.Input{Static: v.staticPods(), Mirrors: v.mirrorPods(), APISeen: apiSeen, StaticSeen: staticSeen})
			}
		}
		if a.observer != nil && u.Source == kubetypes.APISource && u.Op != kubetypes.REMOVE {
			for _, p := range u.Pods {
				if kubetypes.IsMirrorPod(p) {
					a.observer.ObserveMirror(p)
				}
			}
		}
		out, send := a.forConsumer(u)
		if !send {
			continue
		}
		a.served.apply(out)
		logOperation(logger, out)
		select {
		case <-ctx.Done():
			return
		case a.updates <- out:
		}
	}
}

// forConsumer is u without mirror pods, and whether to send it: an update
// of mirror pods only is dropped, except a source's first report, which
// becomes the empty ADD that tells the consumer the source is ready.
func (a *Agent) forConsumer(u kubetypes.PodUpdate) (kubetypes.PodUpdate, bool) {
	out, send := u, true
	if u.Source == kubetypes.APISource {
		kept := make([]*v1.Pod, 0, len(u.Pods))
		for _, p := range u.Pods {
			if !kubetypes.IsMirrorPod(p) {
				kept = append(kept, p)
			}
		}
		if len(kept) < len(u.Pods) {
			out.Pods = kept
			send = len(kept) > 0 || (u.Op == kubetypes.ADD && !a.announced[u.Source])
		}
	}
	if send {
		a.announced[u.Source] = true
	}
	return out, send
}

// seenAll says whether every one of sources has reported.
func (a *Agent) seenAll(sources []string) bool {
	for _, s := range sources {
		if !a.pc.Seen(s) {
			return false
		}
	}
	return true
}

// bothReporters reports to a and b; a may be nil.
func bothReporters(a, b kubetypes.ProblemReporter) kubetypes.ProblemReporter {
	if a == nil {
		return b
	}
	return kubetypes.ProblemReporterFunc(func(p kubetypes.Problem) {
		a.ReportProblem(p)
		b.ReportProblem(p)
	})
}

// underRoot is name under the root directory, or "" without one.
func underRoot(root, name string) string {
	if root == "" {
		return ""
	}
	return filepath.Join(root, name)
}
