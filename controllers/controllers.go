// Package controllers runs Kite's control loops beside the API server:
// each one a client of the API (it watches through listwatch informers and
// writes through a clientset, never through the registry's Go API), so the
// same code runs in "kite server", in an embedded kite.Start, or on its own
// against any Kubernetes API server.
//
// Each controller lives in its own package with New(Options) and Run(ctx),
// owns its goroutines (they end with ctx) and has WaitIdle(ctx), which
// returns once its caches are listed and it has no work queued, for tests.
// The parts they share are small packages here: workqueue (a keyed queue
// with per-key retry delays), informer (a Reflector, an Indexer and change
// handlers; the controllers a Manager runs share one cache per resource
// through its Factory, docs/controllers.md "Shared caches") and events (an
// event recorder).
package controllers

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite/controllers/cronjob"
	"github.com/kite-project/kite/controllers/deployment"
	"github.com/kite-project/kite/controllers/garbagecollector"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/job"
	"github.com/kite-project/kite/controllers/namespace"
	"github.com/kite-project/kite/controllers/nodelifecycle"
	"github.com/kite-project/kite/controllers/podgc"
	"github.com/kite-project/kite/controllers/replicaset"
	"github.com/kite-project/kite/controllers/scheduler"
	"github.com/kite-project/kite/controllers/serviceaccount"
	"github.com/kite-project/kite/controllers/tainteviction"
)

// Controller names, as kube-controller-manager's --controllers names them
// (the scheduler is kube-scheduler's job upstream).
const (
	Namespace      = "namespace-controller"
	ServiceAccount = "serviceaccount-controller"
	Scheduler      = "scheduler"
	NodeLifecycle  = "node-lifecycle-controller"
	TaintEviction  = "taint-eviction-controller"
	PodGC          = "pod-garbage-collector-controller"
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
)

// All names every controller, in start order: what "kite server" runs.
func All() []string {
	return []string{Namespace, ServiceAccount, Scheduler, NodeLifecycle, TaintEviction, PodGC, GarbageCollector, ReplicaSet, Deployment, Job, CronJob}
}

// EmbeddedDefault names what an embedded kite.Start runs unless told
// otherwise: the controllers that make namespaces usable, and none that
// place, taint or remove pods or collect objects behind a test's back
// (name GarbageCollector to have owner references acted on; without it a
// foreground or orphan delete leaves the object with its finalizer, as in
// envtest).
func EmbeddedDefault() []string { return []string{Namespace, ServiceAccount} }

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
}

// Manager runs a set of controllers.
type Manager struct {
	names       []string
	controllers map[string]Controller
}

// New builds the named controllers.
func New(opts Options) (*Manager, error) {
	if opts.Config == nil {
		return nil, fmt.Errorf("controllers: Config is required")
	}
	cfg := rest.CopyConfig(opts.Config)
	cfg.UserAgent = "kite-controllers"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("controllers: client: %w", err)
	}
	m := &Manager{controllers: map[string]Controller{}}
	// One cache per resource (and selector) for every controller, as
	// kube-controller-manager's SharedInformerFactory: the caches hold
	// every pod, so each kept apart costs a copy of each pod.
	informers := informer.NewFactory()
	for _, name := range opts.Names {
		if _, dup := m.controllers[name]; dup {
			continue
		}
		var c Controller
		switch name {
		case Namespace:
			dyn, derr := dynamic.NewForConfig(cfg)
			if derr != nil {
				return nil, fmt.Errorf("controllers: dynamic client: %w", derr)
			}
			c, err = namespace.New(namespace.Options{Client: client, Dynamic: dyn, Informers: informers})
		case ServiceAccount:
			c, err = serviceaccount.New(serviceaccount.Options{Client: client, Informers: informers})
		case Scheduler:
			c, err = scheduler.New(scheduler.Options{Client: client, Informers: informers})
		case NodeLifecycle:
			c, err = nodelifecycle.New(nodelifecycle.Options{Client: client, Informers: informers, GracePeriod: opts.NodeMonitorGracePeriod})
		case TaintEviction:
			c, err = tainteviction.New(tainteviction.Options{Client: client, Informers: informers})
		case GarbageCollector:
			meta, merr := metadata.NewForConfig(cfg)
			if merr != nil {
				return nil, fmt.Errorf("controllers: metadata client: %w", merr)
			}
			c, err = garbagecollector.New(garbagecollector.Options{Metadata: meta, Discovery: client.Discovery()})
		case Deployment:
			c, err = deployment.New(deployment.Options{Client: client, Informers: informers})
		case CronJob:
			c, err = cronjob.New(cronjob.Options{Client: client, Informers: informers})
		case Job:
			c, err = job.New(job.Options{Client: client, Informers: informers})
		case ReplicaSet:
			c, err = replicaset.New(replicaset.Options{Client: client, Informers: informers})
		case PodGC:
			c, err = podgc.New(podgc.Options{Client: client, Informers: informers, TerminatedThreshold: opts.TerminatedPodGCThreshold})
		default:
			return nil, fmt.Errorf("controllers: unknown controller %q (known: %v)", name, All())
		}
		if err != nil {
			return nil, err
		}
		m.names = append(m.names, name)
		m.controllers[name] = c
	}
	return m, nil
}

// Names are the controllers the Manager runs.
func (m *Manager) Names() []string { return slices.Clone(m.names) }

// Get returns the named controller, or nil if the Manager does not run it.
func (m *Manager) Get(name string) Controller { return m.controllers[name] }

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
