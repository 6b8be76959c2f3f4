package flowcontrol

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	flowcontrolapply "k8s.io/client-go/applyconfigurations/flowcontrol/v1"
	flowcontrolclient "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	"k8s.io/klog/v2"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kite-project/kite/listwatch"
)

// Defaults of Options.
const (
	// DefaultServerConcurrencyLimit is kube-apiserver's default
	// --max-requests-inflight (400) + --max-mutating-requests-inflight
	// (200).
	DefaultServerConcurrencyLimit = 600
	// DefaultRequestWaitLimit is how long a request without a deadline
	// may wait in its queue: a quarter of the request timeout (60 s).
	DefaultRequestWaitLimit = 15 * time.Second
)

// ConsumerFieldManager is the field manager of the Dangling conditions
// (upstream's config consumer).
const ConsumerFieldManager = "api-priority-and-fairness-config-consumer-v1"

// Options configure a Controller.
type Options struct {
	// ServerConcurrencyLimit is the seats split among the levels;
	// 0 means DefaultServerConcurrencyLimit.
	ServerConcurrencyLimit int
	// FlowSchemas and PriorityLevels are where the objects are read from.
	// Required.
	FlowSchemas, PriorityLevels listwatch.ListerWatcher
	// RequestWaitLimit: 0 means DefaultRequestWaitLimit.
	RequestWaitLimit time.Duration
	// ObjectCount counts a resource's objects for the work estimator
	// (lists cost seats by it); nil counts none, and every list costs
	// one seat.
	ObjectCount ObjectCount
	// Registerer, when set, gets the apiserver_flowcontrol_* metrics.
	Registerer prometheus.Registerer
}

// Controller is API priority and fairness: it follows the FlowSchemas and
// PriorityLevelConfigurations (Run), limits requests by them (Wrap), and
// keeps the FlowSchemas' Dangling condition (RunStatus). Until its first
// list it classifies by the mandatory objects alone.
type Controller struct {
	serverCL   int
	waitLimit  time.Duration
	infos      *genericapirequest.RequestInfoFactory
	config     atomic.Pointer[config]
	dispatch   *dispatcher
	reflectors []*listwatch.Reflector
	// objectCount and watches are the work estimator's inputs.
	objectCount ObjectCount
	watches     *watchTracker
	metrics     *metrics

	mu  sync.Mutex // guards fss, pls and rebuilding
	fss map[string]*flowcontrolv1.FlowSchema
	pls map[string]*flowcontrolv1.PriorityLevelConfiguration
	// changed is signalled (without blocking) on each new configuration,
	// for the status writer.
	changed chan struct{}
}

// New builds a Controller; Run fills it.
func New(opts Options) (*Controller, error) {
	if opts.FlowSchemas == nil || opts.PriorityLevels == nil {
		return nil, errors.New("flowcontrol: Options.FlowSchemas and PriorityLevels are required")
	}
	c := &Controller{
		serverCL:    opts.ServerConcurrencyLimit,
		waitLimit:   opts.RequestWaitLimit,
		infos:       &genericapirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")},
		dispatch:    newDispatcher(time.Now),
		watches:     newWatchTracker(),
		metrics:     newMetrics(),
		objectCount: opts.ObjectCount,
		fss:         map[string]*flowcontrolv1.FlowSchema{},
		pls:         map[string]*flowcontrolv1.PriorityLevelConfiguration{},
		changed:     make(chan struct{}, 1),
	}
	if c.serverCL <= 0 {
		c.serverCL = DefaultServerConcurrencyLimit
	}
	if c.objectCount == nil {
		c.objectCount = func(string, string) (int64, bool) { return 0, false }
	}
	if opts.Registerer != nil {
		if err := c.metrics.register(opts.Registerer); err != nil {
			return nil, fmt.Errorf("flowcontrol metrics: %w", err)
		}
	}
	if c.waitLimit <= 0 {
		c.waitLimit = DefaultRequestWaitLimit
	}
	for _, r := range []struct {
		name string
		lw   listwatch.ListerWatcher
		to   listwatch.Store
	}{
		{"flowschemas", opts.FlowSchemas, objStore[*flowcontrolv1.FlowSchema]{c, c.fss}},
		{"prioritylevelconfigurations", opts.PriorityLevels, objStore[*flowcontrolv1.PriorityLevelConfiguration]{c, c.pls}},
	} {
		rf, err := listwatch.NewReflector(listwatch.Options{Name: "flowcontrol " + r.name, ListerWatcher: r.lw, Store: r.to, PageSize: -1})
		if err != nil {
			return nil, err
		}
		c.reflectors = append(c.reflectors, rf)
	}
	c.mu.Lock()
	c.rebuildLocked(klog.Background())
	c.mu.Unlock()
	return c, nil
}

// Run follows the objects until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, r := range c.reflectors {
		wg.Go(func() { r.Run(ctx) })
	}
	wg.Wait()
}

// WaitSynced waits for the first list of both kinds.
func (c *Controller) WaitSynced(ctx context.Context) error {
	for _, r := range c.reflectors {
		select {
		case <-r.Synced():
		case <-ctx.Done():
			return fmt.Errorf("flowcontrol caches (%s) not filled: %w", r.Name(), ctx.Err())
		}
	}
	return nil
}

// rebuildLocked digests the objects into a new configuration, gives the
// dispatcher its levels, and tells the status writer.
func (c *Controller) rebuildLocked(logger klog.Logger) {
	fss := make([]*flowcontrolv1.FlowSchema, 0, len(c.fss))
	for _, fs := range c.fss {
		fss = append(fss, fs)
	}
	pls := make([]*flowcontrolv1.PriorityLevelConfiguration, 0, len(c.pls))
	for _, pl := range c.pls {
		pls = append(pls, pl)
	}
	cfg, err := digest(fss, pls, c.serverCL)
	if err != nil {
		logger.Error(err, "Priority and fairness configuration")
	}
	c.dispatch.configure(cfg)
	c.metrics.setLevels(cfg)
	c.config.Store(cfg)
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// objStore is the reflectors' store of one kind, by name: every change
// rebuilds the configuration (a few dozen objects: cheap).
type objStore[T interface {
	runtime.Object
	metav1.Object
}] struct {
	c    *Controller
	objs map[string]T
}

func (s objStore[T]) put(obj runtime.Object, del bool) error {
	o, ok := obj.(T)
	if !ok {
		return fmt.Errorf("flowcontrol store given %T", obj)
	}
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	if del {
		delete(s.objs, o.GetName())
	} else {
		s.objs[o.GetName()] = o
	}
	s.c.rebuildLocked(klog.Background())
	return nil
}

func (s objStore[T]) Add(obj runtime.Object) error    { return s.put(obj, false) }
func (s objStore[T]) Update(obj runtime.Object) error { return s.put(obj, false) }
func (s objStore[T]) Delete(obj runtime.Object) error { return s.put(obj, true) }

func (s objStore[T]) Replace(objs []runtime.Object, _ string) error {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	clear(s.objs)
	for _, obj := range objs {
		o, ok := obj.(T)
		if !ok {
			return fmt.Errorf("flowcontrol store given %T", obj)
		}
		s.objs[o.GetName()] = o
	}
	s.c.rebuildLocked(klog.Background())
	return nil
}

// danglingCondition is the Dangling condition fs should have: True
// (NotFound) when its priority level does not exist, False (Found)
// otherwise, with upstream's messages.
func danglingCondition(fs *flowcontrolv1.FlowSchema, dangling bool) flowcontrolv1.FlowSchemaCondition {
	pl := fs.Spec.PriorityLevelConfiguration.Name
	if dangling {
		return flowcontrolv1.FlowSchemaCondition{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionTrue, Reason: "NotFound",
			Message: fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q but there is no such object", pl)}
	}
	return flowcontrolv1.FlowSchemaCondition{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionFalse, Reason: "Found",
		Message: fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q and it exists", pl)}
}

// statusUpdates are the Dangling conditions to write: those of the
// FlowSchemas whose condition differs from what cfg says.
func statusUpdates(fss []*flowcontrolv1.FlowSchema, cfg *config) map[string]flowcontrolv1.FlowSchemaCondition {
	out := map[string]flowcontrolv1.FlowSchemaCondition{}
	for _, fs := range fss {
		want := danglingCondition(fs, cfg.dangling[fs.Name])
		i := slices.IndexFunc(fs.Status.Conditions, func(c flowcontrolv1.FlowSchemaCondition) bool { return c.Type == want.Type })
		if i >= 0 {
			have := fs.Status.Conditions[i]
			if have.Status == want.Status && have.Reason == want.Reason && have.Message == want.Message {
				continue
			}
		}
		out[fs.Name] = want
	}
	return out
}

// RunStatus writes the FlowSchemas' Dangling conditions through client
// (server-side apply of the status, as upstream's config consumer) after
// each change of the configuration, until ctx ends; failed writes are
// tried again after a second.
func (c *Controller) RunStatus(ctx context.Context, client flowcontrolclient.FlowSchemasGetter) {
	logger := klog.FromContext(ctx)
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.changed:
		case <-retry.C:
		}
		c.mu.Lock()
		fss := make([]*flowcontrolv1.FlowSchema, 0, len(c.fss))
		for _, fs := range c.fss {
			fss = append(fss, fs)
		}
		c.mu.Unlock()
		failed := false
		for name, cond := range statusUpdates(fss, c.config.Load()) {
			apply := flowcontrolapply.FlowSchema(name).WithStatus(flowcontrolapply.FlowSchemaStatus().WithConditions(
				flowcontrolapply.FlowSchemaCondition().WithType(cond.Type).WithStatus(cond.Status).WithReason(cond.Reason).
					WithMessage(cond.Message).WithLastTransitionTime(metav1.Now())))
			_, err := client.FlowSchemas().ApplyStatus(ctx, apply, metav1.ApplyOptions{FieldManager: ConsumerFieldManager, Force: true})
			if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
				logger.Error(err, "Writing the Dangling condition", "flowSchema", name)
				failed = true
			}
		}
		if failed {
			retry.Reset(time.Second)
		}
	}
}
