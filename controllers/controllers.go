// Package controllers runs Kite's control loops beside the API server:
// each one a client of the API (it watches through listwatch informers and
// writes through a clientset, never through the registry's Go API), so the
// same code runs in "kite server", in an embedded kite.Start, or on its own
// against any Kubernetes API server.
//
// Each controller lives in its own package with New(Options) and Run(ctx),
// owns its goroutines (they end with ctx) and has WaitIdle(ctx), which
// returns once its caches are listed and it has no work queued, for tests.
// They run on one scaffold, controller (the queue, informers and workers
// loop with WaitIdle, expectations, the claim decision and its patches,
// the pod helpers: docs/controllers.md "The controller scaffold"). The
// parts below it are small packages here: workqueue (a keyed queue
// with per-key retry delays), informer (a Reflector, an Indexer and change
// handlers; the controllers a Manager runs share one cache per resource
// through its Factory, docs/controllers.md "Shared caches") and events (an
// event recorder).
package controllers

import (
	"context"
	"fmt"
	"os"
	goruntime "runtime"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"

	"github.com/kite-project/kite/controllers/certificates/approver"
	"github.com/kite-project/kite/controllers/certificates/cleaner"
	"github.com/kite-project/kite/controllers/clusterroleaggregation"
	"github.com/kite-project/kite/controllers/cronjob"
	"github.com/kite-project/kite/controllers/daemonset"
	"github.com/kite-project/kite/controllers/deployment"
	"github.com/kite-project/kite/controllers/disruption"
	"github.com/kite-project/kite/controllers/endpoint"
	"github.com/kite-project/kite/controllers/endpointslice"
	"github.com/kite-project/kite/controllers/endpointslicemirroring"
	"github.com/kite-project/kite/controllers/garbagecollector"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/job"
	"github.com/kite-project/kite/controllers/namespace"
	"github.com/kite-project/kite/controllers/nodeipam"
	"github.com/kite-project/kite/controllers/nodelifecycle"
	"github.com/kite-project/kite/controllers/podautoscaler"
	"github.com/kite-project/kite/controllers/podgc"
	"github.com/kite-project/kite/controllers/replicaset"
	"github.com/kite-project/kite/controllers/replication"
	"github.com/kite-project/kite/controllers/resourcequota"
	"github.com/kite-project/kite/controllers/rootcacertpublisher"
	"github.com/kite-project/kite/controllers/scaleclient"
	"github.com/kite-project/kite/controllers/scheduler"
	"github.com/kite-project/kite/controllers/serviceaccount"
	"github.com/kite-project/kite/controllers/serviceaccounttoken"
	"github.com/kite-project/kite/controllers/statefulset"
	"github.com/kite-project/kite/controllers/tainteviction"
	kiteversion "github.com/kite-project/kite/version"
)

// Controller names, as kube-controller-manager's --controllers names them
// (the scheduler is kube-scheduler's job upstream).
const (
	Namespace      = "namespace-controller"
	ServiceAccount = "serviceaccount-controller"
	// RootCACertPublisher keeps the kube-root-ca.crt ConfigMap in every
	// namespace.
	RootCACertPublisher = "root-ca-cert-publisher"
	Scheduler           = "scheduler"
	NodeLifecycle       = "node-lifecycle-controller"
	TaintEviction       = "taint-eviction-controller"
	PodGC               = "pod-garbage-collector-controller"
	// GarbageCollector deletes objects whose owners are gone and carries
	// out foreground and orphan deletion.
	GarbageCollector = "garbage-collector-controller"
	// ReplicaSet keeps each ReplicaSet's pods.
	ReplicaSet = "replicaset-controller"
	// Deployment rolls Deployments out through ReplicaSets.
	Deployment = "deployment-controller"
	// Job runs Jobs' pods to completion (and deletes finished Jobs after
	// ttlSecondsAfterFinished, the ttl-after-finished controller's job).
	Job = "job-controller"
	// CronJob creates Jobs on CronJobs' schedules.
	CronJob = "cronjob-controller"
	// Disruption keeps PodDisruptionBudgets' status.
	Disruption = "disruption-controller"
	// ReplicationController keeps each ReplicationController's pods
	// (the ReplicaSet controller's logic).
	ReplicationController = "replicationcontroller-controller"
	// StatefulSet runs StatefulSets' pods and claims in order.
	StatefulSet = "statefulset-controller"
	// DaemonSet runs a DaemonSet's pod on every eligible node.
	DaemonSet = "daemonset-controller"
	// ClusterRoleAggregation fills aggregated ClusterRoles' rules.
	ClusterRoleAggregation = "clusterrole-aggregation-controller"
	// ServiceAccountToken fills the legacy token Secrets users create.
	ServiceAccountToken = "serviceaccount-token-controller"
	// HorizontalPodAutoscaler scales HPAs' targets on their metrics.
	HorizontalPodAutoscaler = "horizontal-pod-autoscaler"
	// EndpointSlice fills Services' EndpointSlices from their pods.
	EndpointSlice = "endpointslice-controller"
	// Endpoint fills Services' core/v1 Endpoints from their pods.
	Endpoint = "endpoint-controller"
	// EndpointSliceMirroring mirrors selector-less Services' Endpoints into EndpointSlices.
	EndpointSliceMirroring = "endpointslice-mirroring-controller"
	// NodeIPAM gives each Node its podCIDRs from the cluster CIDRs.
	NodeIPAM = "node-ipam-controller"
	// ResourceQuota keeps ResourceQuotas' status.hard and status.used.
	ResourceQuota = "resourcequota-controller"
	// CSRSigning, CSRApproving and CSRCleaner sign, approve and delete
	// CertificateSigningRequests (certificates.go).
	CSRSigning   = "certificatesigningrequest-signing-controller"
	CSRApproving = "certificatesigningrequest-approving-controller"
	CSRCleaner   = "certificatesigningrequest-cleaner-controller"
	// BootstrapSigner signs the cluster-info ConfigMap with each bootstrap
	// token; TokenCleaner deletes expired bootstrap tokens (bootstrap.go).
	BootstrapSigner = "bootstrap-signer-controller"
	TokenCleaner    = "token-cleaner-controller"
)

// All names every controller, in start order: what "kite server" runs.
func All() []string {
	var names []string
	for _, e := range table() {
		names = append(names, e.name)
	}
	return names
}

// builder is what a controller is built from: cfg and client are the
// controller's own (its identity), root the Manager's.
type builder struct {
	cfg       *rest.Config
	client    kubernetes.Interface
	root      *rest.Config
	informers *informer.Factory
	opts      Options
	// creds hands out ServiceAccount configurations; nil without
	// UseServiceAccountCredentials.
	creds *credentials
}

// entry is one controller of the table: its name and how it is built.
type entry struct {
	name  string
	build func(b builder) (Controller, error)
}

// table is every controller, in start order. Adding a controller is a
// line here.
func table() []entry {
	return append([]entry{
		{Namespace, func(b builder) (Controller, error) {
			dyn, err := dynamic.NewForConfig(b.cfg)
			if err != nil {
				return nil, fmt.Errorf("controllers: dynamic client: %w", err)
			}
			return built(namespace.New(namespace.Options{Client: b.client, Dynamic: dyn, Informers: b.informers}))
		}},
		{ServiceAccount, func(b builder) (Controller, error) {
			return built(serviceaccount.New(serviceaccount.Options{Client: b.client, Informers: b.informers}))
		}},
		{RootCACertPublisher, func(b builder) (Controller, error) {
			ca, err := rootCA(b.root)
			if err != nil {
				return nil, err
			}
			return built(rootcacertpublisher.New(rootcacertpublisher.Options{Client: b.client, RootCA: ca, Informers: b.informers}))
		}},
		{Scheduler, func(b builder) (Controller, error) {
			return built(scheduler.New(scheduler.Options{Client: b.client, Informers: b.informers}))
		}},
		{NodeLifecycle, func(b builder) (Controller, error) {
			return built(nodelifecycle.New(nodelifecycle.Options{Client: b.client, Informers: b.informers, GracePeriod: b.opts.NodeMonitorGracePeriod}))
		}},
		{TaintEviction, func(b builder) (Controller, error) {
			return built(tainteviction.New(tainteviction.Options{Client: b.client, Informers: b.informers}))
		}},
		{PodGC, func(b builder) (Controller, error) {
			return built(podgc.New(podgc.Options{Client: b.client, Informers: b.informers, TerminatedThreshold: b.opts.TerminatedPodGCThreshold}))
		}},
		{ResourceQuota, func(b builder) (Controller, error) {
			meta, err := metadata.NewForConfig(b.cfg)
			if err != nil {
				return nil, fmt.Errorf("controllers: metadata client: %w", err)
			}
			return built(resourcequota.New(resourcequota.Options{Client: b.client, Metadata: meta, Informers: b.informers}))
		}},
		{GarbageCollector, func(b builder) (Controller, error) {
			meta, err := metadata.NewForConfig(b.cfg)
			if err != nil {
				return nil, fmt.Errorf("controllers: metadata client: %w", err)
			}
			return built(garbagecollector.New(garbagecollector.Options{Metadata: meta, Discovery: b.client.Discovery()}))
		}},
		{ReplicaSet, func(b builder) (Controller, error) {
			return built(replicaset.New(replicaset.Options{Client: b.client, Informers: b.informers}))
		}},
		{Deployment, func(b builder) (Controller, error) {
			return built(deployment.New(deployment.Options{Client: b.client, Informers: b.informers}))
		}},
		{Job, func(b builder) (Controller, error) {
			// Kite's Job controller does the ttl-after-finished
			// controller's deletions too, with its identity.
			_, ttl, err := b.serviceAccountConfig(ttlAfterFinished)
			if err != nil {
				return nil, err
			}
			return built(job.New(job.Options{Client: b.client, TTLClient: ttl, Informers: b.informers}))
		}},
		{CronJob, func(b builder) (Controller, error) {
			return built(cronjob.New(cronjob.Options{Client: b.client, Informers: b.informers}))
		}},
		{Disruption, func(b builder) (Controller, error) {
			scales, err := scaleclient.New(b.cfg)
			if err != nil {
				return nil, fmt.Errorf("controllers: %s: %w", Disruption, err)
			}
			return built(disruption.New(disruption.Options{Client: b.client, Scales: scales, Informers: b.informers}))
		}},
		{ReplicationController, func(b builder) (Controller, error) {
			return built(replication.New(replication.Options{Client: b.client, Informers: b.informers}))
		}},
		{StatefulSet, func(b builder) (Controller, error) {
			return built(statefulset.New(statefulset.Options{Client: b.client, Informers: b.informers}))
		}},
		{DaemonSet, func(b builder) (Controller, error) {
			return built(daemonset.New(daemonset.Options{Client: b.client, Informers: b.informers}))
		}},
		{ClusterRoleAggregation, func(b builder) (Controller, error) {
			return built(clusterroleaggregation.New(clusterroleaggregation.Options{Client: b.client, Informers: b.informers}))
		}},
		{ServiceAccountToken, buildServiceAccountToken},
		{HorizontalPodAutoscaler, func(b builder) (Controller, error) {
			scales, err := scaleclient.New(b.cfg)
			if err != nil {
				return nil, fmt.Errorf("controllers: %s: %w", HorizontalPodAutoscaler, err)
			}
			// Resource metrics from metrics.k8s.io: Kite's built-in API,
			// or a metrics-server's.
			mc, err := metricsclient.NewForConfig(b.cfg)
			if err != nil {
				return nil, fmt.Errorf("controllers: %s: %w", HorizontalPodAutoscaler, err)
			}
			metrics := podautoscaler.ResourceMetrics{Client: b.client, Metrics: mc}
			return built(podautoscaler.New(podautoscaler.Options{Client: b.client, Scales: scales, Informers: b.informers, Metrics: metrics}))
		}},
		{EndpointSlice, func(b builder) (Controller, error) {
			return built(endpointslice.New(endpointslice.Options{Client: b.client, Informers: b.informers}))
		}},
		{Endpoint, func(b builder) (Controller, error) {
			return built(endpoint.New(endpoint.Options{Client: b.client, Informers: b.informers}))
		}},
		{EndpointSliceMirroring, func(b builder) (Controller, error) {
			return built(endpointslicemirroring.New(endpointslicemirroring.Options{Client: b.client, Informers: b.informers}))
		}},
		{NodeIPAM, func(b builder) (Controller, error) {
			o := b.opts.NodeIPAM
			o.Client, o.Informers = b.client, b.informers
			return built(nodeipam.New(o))
		}},
		{CSRSigning, buildCSRSigning},
		{CSRApproving, func(b builder) (Controller, error) {
			return built(approver.New(approver.Options{Client: b.client, Informers: b.informers}))
		}},
		{CSRCleaner, func(b builder) (Controller, error) {
			return built(cleaner.New(cleaner.Options{Client: b.client, Informers: b.informers}))
		}},
	}, slices.Concat(storageEntries(), bootstrapEntries(), admissionPolicyEntries())...)
}

// rootCA is the bundle the root CA publisher publishes: the CA the
// Config verifies the API server with, as kube-controller-manager's
// without --root-ca-file. In kite server and kite.Start that is the
// cluster CA (pki/ under the data dir); for kite controllers, the
// kubeconfig's certificate-authority(-data).
func rootCA(cfg *rest.Config) ([]byte, error) {
	if len(cfg.CAData) > 0 {
		return cfg.CAData, nil
	}
	if cfg.CAFile != "" {
		ca, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("controllers: %s: CA file: %w", RootCACertPublisher, err)
		}
		if len(ca) > 0 {
			return ca, nil
		}
	}
	return nil, fmt.Errorf("controllers: %s: the config of %s has no certificate authority to publish; leave the controller out", RootCACertPublisher, cfg.Host)
}

// built turns a controller package's New result into a Controller.
func built[C Controller](c C, err error) (Controller, error) {
	if err != nil {
		return nil, err
	}
	return c, nil
}

// EmbeddedDefault names what an embedded kite.Start runs unless told
// otherwise: the controllers that make namespaces usable, the one that
// fills the aggregated bootstrap roles (admin, edit, view), and none that
// place, taint or remove pods or collect objects behind a test's back
// (name GarbageCollector to have owner references acted on; without it a
// foreground or orphan delete leaves the object with its finalizer, as in
// envtest).
func EmbeddedDefault() []string {
	return []string{Namespace, ServiceAccount, RootCACertPublisher, ClusterRoleAggregation}
}

// Controller is what each controller package provides.
type Controller interface {
	Run(ctx context.Context)
	WaitIdle(ctx context.Context) error
}

// Options configure a Manager.
type Options struct {
	// Config reaches the API server. Required.
	Config *rest.Config
	// Names are the controllers to run (see All); unknown names are an
	// error.
	Names []string
	// NodeMonitorGracePeriod is how long a node may go without renewing
	// its Lease or posting its status before it is Unknown
	// (--node-monitor-grace-period); 0 means 50 s.
	NodeMonitorGracePeriod time.Duration
	// TerminatedPodGCThreshold is how many terminated pods may exist
	// before the oldest are deleted (--terminated-pod-gc-threshold); 0
	// means 12500, negative never.
	TerminatedPodGCThreshold int
	// NodeIPAM are the node IPAM controller's ranges (--cluster-cidr,
	// --node-cidr-mask-size); its Client and Informers are the Manager's.
	NodeIPAM nodeipam.Options
	// ClusterSigningCertFile and ClusterSigningKeyFile are the CA the CSR
	// signer signs with (kube-controller-manager's
	// --cluster-signing-cert-file and --cluster-signing-key-file): the
	// cluster CA in kite server. Without them the signer signs nothing.
	ClusterSigningCertFile, ClusterSigningKeyFile string
	// ClusterSigningDuration is the longest certificate the signer
	// issues (--cluster-signing-duration); 0 means a year.
	ClusterSigningDuration time.Duration
	// UseServiceAccountCredentials runs each controller as its own
	// ServiceAccount in kube-system, as kube-controller-manager's
	// --use-service-account-credentials: system:serviceaccount:kube-system:<name>,
	// <name> the one upstream's controller uses (replicaset-controller,
	// node-controller, ...), which the bootstrap policy binds to
	// system:controller:<name>. Config's identity (system:kube-controller-manager
	// in kite server) then lists and watches the shared caches, makes the
	// ServiceAccounts and asks for their tokens (TokenRequest, an hour's,
	// renewed at 80 %). Without it every controller uses Config.
	UseServiceAccountCredentials bool
	// SchedulerConfig is the scheduler's identity (system:kube-scheduler
	// in kite server, as kube-scheduler's own kubeconfig); nil means
	// Config.
	SchedulerConfig *rest.Config
}

// Manager runs a set of controllers.
type Manager struct {
	names       []string
	controllers map[string]Controller
	// configs are the controllers' client configurations (identities).
	configs map[string]*rest.Config
}

// New builds the named controllers.
func New(opts Options) (*Manager, error) {
	if opts.Config == nil {
		return nil, fmt.Errorf("controllers: Config is required")
	}
	cfg := rest.CopyConfig(opts.Config)
	// kube-controller-manager's user agent (its binary's
	// DefaultKubernetesUserAgent): the API server names the field manager
	// of the controllers' writes after its first word, so managedFields
	// and server-side apply conflicts say "kube-controller-manager", as
	// against upstream.
	cfg.UserAgent = fmt.Sprintf("kube-controller-manager/%s (%s/%s) kite", kiteversion.GitVersion, goruntime.GOOS, goruntime.GOARCH)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("controllers: client: %w", err)
	}
	m := &Manager{controllers: map[string]Controller{}, configs: map[string]*rest.Config{}}
	// One cache per resource (and selector) for every controller, as
	// kube-controller-manager's SharedInformerFactory: the caches hold
	// every pod, so each kept apart costs a copy of each pod.
	root := builder{cfg: cfg, client: client, root: cfg, informers: informer.NewFactory(), opts: opts}
	if opts.UseServiceAccountCredentials {
		if root.creds, err = newCredentials(cfg); err != nil {
			return nil, err
		}
	}
	entries := table()
	for _, name := range opts.Names {
		if _, dup := m.controllers[name]; dup {
			continue
		}
		i := slices.IndexFunc(entries, func(e entry) bool { return e.name == name })
		if i < 0 {
			return nil, fmt.Errorf("controllers: unknown controller %q (known: %v)", name, All())
		}
		b, err := root.as(name)
		if err != nil {
			return nil, err
		}
		c, err := entries[i].build(b)
		if err != nil {
			return nil, err
		}
		m.names = append(m.names, name)
		m.controllers[name] = c
		m.configs[name] = b.cfg
	}
	return m, nil
}

// as is the builder of the named controller: with its identity (the
// scheduler's, or its ServiceAccount's), else the root's.
func (b builder) as(name string) (builder, error) {
	var cfg *rest.Config
	switch {
	case name == Scheduler:
		// kube-scheduler's user agent, with its own identity when it
		// has one: the API server names the field manager of its
		// status patches after the first word, "kube-scheduler", as
		// against upstream.
		cfg = rest.CopyConfig(b.root)
		if b.opts.SchedulerConfig != nil {
			cfg = rest.CopyConfig(b.opts.SchedulerConfig)
		}
		cfg.UserAgent = fmt.Sprintf("kube-scheduler/%s (%s/%s) kite", kiteversion.GitVersion, goruntime.GOOS, goruntime.GOARCH)
	case b.creds == nil:
		return b, nil
	default:
		sa, ok := serviceAccountOf(name)
		if !ok {
			return builder{}, fmt.Errorf("controllers: %s has no ServiceAccount to run as", name)
		}
		if sa == "" {
			return b, nil
		}
		cfg = b.creds.configFor(sa)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return builder{}, fmt.Errorf("controllers: client of %s: %w", name, err)
	}
	b.cfg, b.client = cfg, client
	return b, nil
}

// serviceAccountConfig is the configuration of the ServiceAccount sa
// in kube-system with b's credentials, or b's own without them.
func (b builder) serviceAccountConfig(sa string) (*rest.Config, kubernetes.Interface, error) {
	if b.creds == nil {
		return b.cfg, b.client, nil
	}
	cfg := b.creds.configFor(sa)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("controllers: client of %s: %w", sa, err)
	}
	return cfg, client, nil
}

// Names are the controllers the Manager runs.
func (m *Manager) Names() []string { return slices.Clone(m.names) }

// Get returns the named controller, or nil if the Manager does not run it.
func (m *Manager) Get(name string) Controller { return m.controllers[name] }

// Config returns the client configuration the named controller runs
// with (its identity), or nil if the Manager does not run it: for tests
// and tools that check what a controller may do.
func (m *Manager) Config(name string) *rest.Config {
	if c := m.configs[name]; c != nil {
		return rest.CopyConfig(c)
	}
	return nil
}

// Run runs every controller until ctx ends and they have stopped.
func (m *Manager) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, name := range m.names {
		c := m.controllers[name]
		wg.Go(func() { c.Run(ctx) })
	}
	wg.Wait()
}

// WaitIdle returns once every controller is idle at the same pass.
func (m *Manager) WaitIdle(ctx context.Context) error {
	for _, name := range m.names {
		if err := m.controllers[name].WaitIdle(ctx); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// buildServiceAccountToken builds the tokens controller: ca.crt is the
// root CA publisher's bundle.
func buildServiceAccountToken(b builder) (Controller, error) {
	ca, err := rootCA(b.root)
	if err != nil {
		return nil, err
	}
	return built(serviceaccounttoken.New(serviceaccounttoken.Options{Client: b.client, RootCA: ca, Informers: b.informers}))
}
