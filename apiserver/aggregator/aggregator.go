// Package aggregator is the aggregation layer (kube-aggregator's part of
// kube-apiserver): the group versions that an APIService hands to an
// extension API server behind a Service are proxied to it, with the
// user's identity in the front-proxy headers and the front-proxy client
// certificate; their discovery is merged into the server's own; and each
// such APIService's Available condition says whether its server answers.
//
// One goroutine (Run) owns the state: it follows the APIServices, checks
// each remote one (every CheckInterval, and whenever the APIServices
// change), writes the conditions that changed, and publishes a snapshot
// that requests read without locks.
package aggregator

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/kite-project/kite/listwatch"
	"github.com/kite-project/kite/registry/webhook"
)

// DefaultCheckInterval is how often every remote APIService is checked
// again, as kube-aggregator's availability controller resyncs.
const DefaultCheckInterval = 30 * time.Second

// checkTimeout bounds one discovery check, as upstream's.
const checkTimeout = 5 * time.Second

// Services is what the checks read of Services and their EndpointSlices
// (storeServices: the server's own stores).
type Services interface {
	// Service returns the Service, or an error that is NotFound when it
	// does not exist.
	Service(ctx context.Context, namespace, name string) (*corev1.Service, error)
	// EndpointSlices returns the Service's EndpointSlices.
	EndpointSlices(ctx context.Context, namespace, name string) ([]discoveryv1.EndpointSlice, error)
	// ResolveEndpoint is where a request to the Service's port goes.
	ResolveEndpoint(namespace, name string, port int32) (*url.URL, error)
}

// Options configure an Aggregator.
type Options struct {
	// APIServices lists and watches apiregistration.k8s.io/v1
	// APIServices. Required.
	APIServices listwatch.ListerWatcher
	// Stores are the server's stores: Services and EndpointSlices are
	// read from them, APIServices' conditions written through them.
	// Required.
	Stores webhook.Stores
	// FrontProxy is the client certificate presented to extension API
	// servers (pki.EnsureFrontProxy). Required.
	FrontProxy tls.Certificate
	// CheckInterval is how often the remote APIServices are checked;
	// DefaultCheckInterval when zero.
	CheckInterval time.Duration
	// Now is the clock of the conditions; time.Now when nil.
	Now func() time.Time
}

// Aggregator proxies and describes the remote group versions.
type Aggregator struct {
	opts      Options
	services  Services
	reflector *listwatch.Reflector

	// latest is the APIServices as last listed or watched, written by the
	// reflector's store (its push), read by Run.
	latest atomic.Pointer[[]*apiregistrationv1.APIService]
	// changed wakes Run after a push; it holds at most one wake-up.
	changed chan struct{}

	// state is what requests read: written by Run only.
	state atomic.Pointer[state]

	// transports are the connections to each remote, by APIService name,
	// reused while its spec stays the same: owned by Run.
	transports map[string]*remoteTransport
}

// state is one snapshot of the remote group versions.
type state struct {
	remotes map[schema.GroupVersion]*remote
	// groups are the remote groups in discovery's order.
	groups []metav1.APIGroup
	// discovery is the aggregated discovery of those that answered.
	discovery []apidiscoveryv2.APIGroupDiscovery
	// priorities order the remote groups among all groups (GroupPriority).
	priorities map[string]groupPriority
}

// New returns an Aggregator; Run makes it work.
func New(opts Options) (*Aggregator, error) {
	if opts.APIServices == nil || opts.Stores == nil {
		return nil, errors.New("aggregator: APIServices and Stores are required")
	}
	if len(opts.FrontProxy.Certificate) == 0 {
		return nil, errors.New("aggregator: no front-proxy client certificate")
	}
	if opts.CheckInterval <= 0 {
		opts.CheckInterval = DefaultCheckInterval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	a := &Aggregator{opts: opts, services: newStoreServices(opts.Stores), changed: make(chan struct{}, 1), transports: map[string]*remoteTransport{}}
	a.state.Store(&state{})
	store := listwatch.NewUndeltaStore(listwatch.UndeltaOptions[*apiregistrationv1.APIService]{
		Push: func(all []*apiregistrationv1.APIService) {
			a.latest.Store(&all)
			a.wake()
		},
		KeyFunc: listwatch.NamespaceNameKey,
	})
	var err error
	a.reflector, err = listwatch.NewReflector(listwatch.Options{Name: "aggregator apiservices", ListerWatcher: opts.APIServices, Store: store, PageSize: -1})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// wake makes Run check again soon; wake-ups coalesce.
func (a *Aggregator) wake() {
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

// Run follows the APIServices and checks the remote ones until ctx ends.
func (a *Aggregator) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { a.reflector.Run(ctx) })
	timer := time.NewTimer(a.opts.CheckInterval)
	defer timer.Stop()
	defer func() {
		for _, t := range a.transports {
			t.close()
		}
	}()
	// retry is the wait before the next check while a remote APIService
	// is not available: from a second, doubling up to CheckInterval, as
	// upstream's controller requeues failures with back-off and rechecks
	// when their Services and endpoints change (which this one does not
	// follow).
	retry := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.changed:
		case <-timer.C:
		}
		next := a.opts.CheckInterval
		if a.sync(ctx) {
			retry = 0
		} else {
			retry = min(max(2*retry, time.Second), a.opts.CheckInterval)
			next = retry
		}
		timer.Reset(next)
	}
}

// sync checks every remote APIService, publishes what requests see and
// writes the conditions that changed. It reports whether every remote
// APIService is available.
func (a *Aggregator) sync(ctx context.Context) bool {
	all := a.latest.Load()
	if all == nil {
		return true
	}
	var remotes []*apiregistrationv1.APIService
	for _, svc := range *all {
		if svc.Spec.Service != nil && svc.Spec.Service.Port != nil {
			remotes = append(remotes, svc)
		}
	}
	// The transports of APIServices gone or changed are closed.
	keep := map[string]*remoteTransport{}
	for _, svc := range remotes {
		t := a.transports[svc.Name]
		if t == nil || !t.serves(svc) {
			if t != nil {
				t.close()
			}
			var err error
			if t, err = newRemoteTransport(svc, a.opts.FrontProxy); err != nil {
				klog.FromContext(ctx).Error(err, "APIService transport", "apiservice", svc.Name)
			}
		}
		keep[svc.Name] = t
	}
	for name, t := range a.transports {
		if keep[name] != t && t != nil {
			t.close()
		}
	}
	a.transports = keep

	results := make([]checkResult, len(remotes))
	var wg sync.WaitGroup
	for i, svc := range remotes {
		wg.Go(func() { results[i] = a.check(ctx, svc, keep[svc.Name]) })
	}
	wg.Wait()

	prev := a.state.Load()
	next := &state{remotes: map[schema.GroupVersion]*remote{}}
	for i, svc := range remotes {
		gv := schema.GroupVersion{Group: svc.Spec.Group, Version: svc.Spec.Version}
		r := &remote{apiService: svc, transport: keep[svc.Name], available: results[i].condition.Status == apiregistrationv1.ConditionTrue, services: a.services, recheck: a.wake}
		r.resources, r.stale = results[i].resources, false
		if r.resources == nil {
			// As upstream's discovery manager: what a server said last is
			// served, marked stale, while it does not answer.
			if old := prev.remotes[gv]; old != nil && old.apiService.UID == svc.UID {
				r.resources, r.stale = old.resources, old.resources != nil
			}
		}
		next.remotes[gv] = r
	}
	next.groups, next.discovery = discoveryOf(remotes, next.remotes)
	next.priorities = prioritiesOf(remotes)
	a.state.Store(next)

	allAvailable := true
	for i, svc := range remotes {
		allAvailable = allAvailable && results[i].condition.Status == apiregistrationv1.ConditionTrue
		if cond, changed := nextCondition(svc, results[i].condition, metav1.NewTime(a.opts.Now())); changed {
			upd := svc.DeepCopy()
			setCondition(upd, cond)
			if err := updateStatus(ctx, a.opts.Stores, upd); err != nil && ctx.Err() == nil {
				klog.FromContext(ctx).Error(err, "Updating APIService availability", "apiservice", svc.Name)
			}
		}
	}
	return allAvailable
}

// Proxy returns the handler of gv when an APIService hands it to an
// extension API server, else nil.
func (a *Aggregator) Proxy(gv schema.GroupVersion) http.Handler {
	if r := a.state.Load().remotes[gv]; r != nil {
		return r
	}
	return nil
}

// Groups are the groups of the remote APIServices for /apis and
// /apis/<group>, every one whether available or not (as upstream's), by
// group priority; each group's versions by version priority.
func (a *Aggregator) Groups() []metav1.APIGroup { return a.state.Load().groups }

// remoteTransport is one APIService's connections.
type remoteTransport struct {
	spec      apiregistrationv1.APIServiceSpec
	transport *http.Transport
}

func newRemoteTransport(svc *apiregistrationv1.APIService, client tls.Certificate) (*remoteTransport, error) {
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{client},
		// The name the extension server's certificate must carry, as
		// upstream's: <service>.<namespace>.svc.
		ServerName:         svc.Spec.Service.Name + "." + svc.Spec.Service.Namespace + ".svc",
		InsecureSkipVerify: svc.Spec.InsecureSkipTLSVerify, //nolint:gosec // the APIService asks for it, as upstream allows
	}
	if len(svc.Spec.CABundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(svc.Spec.CABundle) {
			return nil, fmt.Errorf("APIService %s: caBundle holds no PEM certificate", svc.Name)
		}
		cfg.RootCAs = pool
	}
	return &remoteTransport{spec: *svc.Spec.DeepCopy(), transport: &http.Transport{
		TLSClientConfig:     cfg,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
	}}, nil
}

func (t *remoteTransport) serves(svc *apiregistrationv1.APIService) bool {
	s := t.spec
	return s.Service.Namespace == svc.Spec.Service.Namespace && s.Service.Name == svc.Spec.Service.Name &&
		*s.Service.Port == *svc.Spec.Service.Port && s.InsecureSkipTLSVerify == svc.Spec.InsecureSkipTLSVerify &&
		string(s.CABundle) == string(svc.Spec.CABundle)
}

func (t *remoteTransport) close() {
	if t != nil {
		t.transport.CloseIdleConnections()
	}
}
