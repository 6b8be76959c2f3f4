package apiserver

import (
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/apiserver/metrics"
	"github.com/kite-project/kite/apiserver/pargzip"
	"github.com/kite-project/kite/registry"
)

// DefaultMaxRequestBodyBytes is kube-apiserver's limit on request bodies
// (3 MiB); larger ones get 413.
const DefaultMaxRequestBodyBytes = 3 << 20

// DefaultMinRequestTimeout is kube-apiserver's --min-request-timeout: a
// watch without timeoutSeconds lasts between it and twice it.
const DefaultMinRequestTimeout = 30 * time.Minute

// Options configure a Server.
type Options struct {
	// Stores serve the resources; each is routed by its strategy's group,
	// version and resource. Required; SetStores replaces them later.
	Stores []*registry.Store
	// Scheme knows every kind the Stores serve, plus the meta kinds
	// (NewScheme). Required.
	Scheme *runtime.Scheme
	// Version is what /version returns.
	Version version.Info
	// Authenticator, if set, wraps the API behind authentication (health
	// endpoints stay open as the authenticator decides).
	Authenticator interface {
		Wrap(next http.Handler) http.Handler
	}
	// Authorizer, if set, lets through only the authenticated requests it
	// allows (it runs after the Authenticator, which must then be set);
	// the others get 403.
	Authorizer interface {
		Wrap(next http.Handler) http.Handler
	}
	// FlowControl, if set, is API priority and fairness
	// (apiserver/flowcontrol): it runs between authentication and
	// authorization, as upstream's filter, and replaces the in-flight
	// limits below.
	FlowControl interface {
		Wrap(next http.Handler) http.Handler
	}
	// Checks are health checks for /healthz, /livez and /readyz;
	// ReadyChecks only for /readyz (e.g. watch caches synced).
	Checks      []HealthCheck
	ReadyChecks []HealthCheck
	// Tables converts objects and lists to metav1.Table for kubectl get;
	// nil means Tables are refused and kubectl falls back to plain JSON.
	Tables TableFunc
	// Metrics, if set, counts requests and watch events and serves
	// /metrics.
	Metrics *metrics.Metrics
	// Connect, if set, serves the connect subresources it handles
	// (nodeproxy: pods/log, exec, attach, portforward); an error it
	// returns was not written yet and goes out as a Status. Also
	// pods/proxy, services/proxy, nodes/proxy.
	Connect Connecter
	// Remote, if set, is the aggregation layer: the group versions that
	// APIServices hand to extension API servers are served by its
	// proxies, and their groups are part of discovery.
	Remote Remote
	// Extra handlers by path prefix (e.g. "/openapi/", "/metrics").
	Extra map[string]http.Handler
	// MaxRequestBodyBytes bounds request bodies; 0 means 3 MiB.
	MaxRequestBodyBytes int64
	// MinRequestTimeout bounds watches without timeoutSeconds; 0 means
	// 30 minutes.
	MinRequestTimeout time.Duration
	// MaxRequestsInFlight and MaxMutatingRequestsInFlight bound the
	// read-only (GET) and the other requests served at once, as
	// kube-apiserver's --max-requests-inflight and
	// --max-mutating-requests-inflight: past its limit a request gets
	// upstream's 429 with Retry-After. Long-running requests (watches,
	// logs, exec) and those of system:masters are not counted. 0 means
	// the default (400 and 200), negative no limit.
	MaxRequestsInFlight, MaxMutatingRequestsInFlight int
	// WriteTimeout bounds each write of a watch, and how long other
	// responses may take beyond the request timeout; past it the
	// response is cut (its HTTP/2 stream reset, its HTTP/1.1 connection
	// closed). 0 means DefaultWriteTimeout.
	WriteTimeout time.Duration
}

// Connecter serves subresources that are not objects: logs and streams.
type Connecter interface {
	Handles(resource, subresource string) bool
	// path is what follows a proxy subresource (requestInfo.ProxyPath).
	Serve(w http.ResponseWriter, r *http.Request, resource, namespace, name, subresource, path string) error
}

// TableFunc turns an object or a list into a Table of group version gv
// (meta.k8s.io/v1 or v1beta1), with rows carrying what includeObject
// asks for.
type TableFunc func(obj runtime.Object, includeObject metav1.IncludeObjectPolicy, noHeaders bool, gv schema.GroupVersion) (*metav1.Table, error)

// Server serves the Kubernetes API. It is an http.Handler; it starts no
// goroutines of its own beyond those of the requests it serves.
type Server struct {
	opts    Options
	codecs  serializer.CodecFactory
	scheme  *runtime.Scheme
	handler http.Handler
	// set is what is served now (routes and discovery); see SetStores.
	set      atomic.Pointer[resources]
	maxBody  int64
	minWatch time.Duration
	// inflight holds the request limits (see inflight.go).
	inflight     inflight
	writeTimeout time.Duration
	// gzips recycles the compressors of large responses.
	gzips pargzip.Pool
	// watchGzips recycles the compressors of streaming lists' live
	// events (*gzip.Writer), one member per flush.
	watchGzips sync.Pool
	// watchBatches recycles the buffers of watches' live events
	// (*bytes.Buffer), one per batch in flight.
	watchBatches sync.Pool
	// shuttingDown makes /readyz fail while the server drains.
	shuttingDown atomic.Bool
}

// New returns a Server for opts.
func New(opts Options) (*Server, error) {
	if opts.Scheme == nil {
		return nil, errors.New("apiserver: Options.Scheme is required")
	}
	s := &Server{
		opts:   opts,
		scheme: opts.Scheme,
		codecs: serializer.NewCodecFactory(opts.Scheme,
			serializer.WithStreamingCollectionEncodingToJSON(), serializer.WithStreamingCollectionEncodingToProtobuf()),
		maxBody:      opts.MaxRequestBodyBytes,
		minWatch:     opts.MinRequestTimeout,
		inflight:     newInflight(opts.MaxRequestsInFlight, opts.MaxMutatingRequestsInFlight),
		writeTimeout: opts.WriteTimeout,
	}
	if s.writeTimeout <= 0 {
		s.writeTimeout = DefaultWriteTimeout
	}
	if s.maxBody == 0 {
		s.maxBody = DefaultMaxRequestBodyBytes
	}
	if s.minWatch == 0 {
		s.minWatch = DefaultMinRequestTimeout
	}
	if err := s.SetStores(opts.Stores); err != nil {
		return nil, err
	}
	var h http.Handler = http.HandlerFunc(s.serve)
	if opts.Metrics != nil {
		h = opts.Metrics.TrackInflight(h, isLongRunning)
	}
	if opts.Authorizer != nil {
		h = opts.Authorizer.Wrap(h)
	}
	if opts.FlowControl != nil {
		h = opts.FlowControl.Wrap(h)
		s.inflight = newInflight(-1, -1)
	}
	if opts.Authenticator != nil {
		h = opts.Authenticator.Wrap(h)
	}
	s.handler = h
	return s, nil
}

// ShutDown makes /readyz fail, so that load balancers stop sending
// requests before the listener closes.
func (s *Server) ShutDown() { s.shuttingDown.Store(true) }

// ServeHTTP is the whole request pipeline: recover from panics, then
// authenticate and authorize (if configured), then serve: the in-flight limit, the
// bound on writing the response, routing.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			klog.ErrorS(fmt.Errorf("%v", v), "Panic serving request", "method", r.Method, "path", r.URL.Path, "stack", string(debug.Stack()))
			s.writeError(w, r, fmt.Errorf("panic: %v", v))
		}
	}()
	s.handler.ServeHTTP(w, r)
}

// serve admits an authenticated request within the in-flight limits and
// bounds how long its response may take to write, then routes it: the
// fixed paths first, then the API resources.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	longRunning := isLongRunning(r)
	kind, ok := s.inflight.acquire(r, longRunning)
	if !ok {
		tooManyRequests(w)
		return
	}
	defer s.inflight.release(kind)
	if !longRunning {
		// A watch bounds each of its writes instead (watch.go).
		bound := newWriteBound(w)
		bound.arm(DefaultRequestTimeout + s.writeTimeout)
		defer bound.stop()
	}

	path := r.URL.Path
	switch {
	case path == "/version" || path == "/version/":
		s.writeJSON(w, http.StatusOK, s.opts.Version)
		return
	case isHealthPath(path):
		s.serveHealth(w, r)
		return
	case path == "/metrics" && s.opts.Metrics != nil:
		s.opts.Metrics.Handler().ServeHTTP(w, r)
		return
	case path == "/api" || path == "/api/":
		s.serveAPIVersions(w, r)
		return
	case path == "/apis" || path == "/apis/":
		s.serveAPIGroups(w, r)
		return
	}
	for prefix, h := range s.opts.Extra {
		if path == strings.TrimSuffix(prefix, "/") || strings.HasPrefix(path, prefix) {
			h.ServeHTTP(w, r)
			return
		}
	}
	if h := s.remoteHandler(path); h != nil {
		h.ServeHTTP(w, r)
		return
	}
	info, err := parsePath(path)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if info.Resource == "" {
		s.serveDiscovery(w, r, info)
		return
	}
	s.serveResource(w, r, info)
}

// isLongRunning reports requests that are not counted as in flight nor
// bounded by the request timeout: watches, and the streaming subresources
// (kube-apiserver's long-running check: verbs watch and proxy,
// subresources attach, exec, log, portforward and proxy).
func isLongRunning(r *http.Request) bool {
	path := r.URL.Path
	if isWatchQuery(r) || strings.Contains(path, "/watch/") {
		return true
	}
	if !strings.Contains(path, "/attach") && !strings.Contains(path, "/exec") && !strings.Contains(path, "/log") &&
		!strings.Contains(path, "/portforward") && !strings.Contains(path, "/proxy") {
		return false
	}
	info, err := parsePath(path)
	if err != nil {
		return false
	}
	switch info.Subresource {
	case "attach", "exec", "log", "portforward", "proxy":
		return true
	}
	return false
}
