package metricsapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// DefaultResolution is how often the agents are read: metrics-server's
// default --metric-resolution.
const DefaultResolution = 15 * time.Second

// GroupVersion is what the API serves.
var GroupVersion = metricsv1beta1.SchemeGroupVersion

// Lister lists objects of one resource (registry.Store.List).
type Lister interface {
	List(ctx context.Context, namespace string, opts *metainternalversion.ListOptions) (runtime.Object, error)
}

// Options configure an API.
type Options struct {
	// Nodes and Pods list the nodes to read and the pods whose labels
	// the metrics carry. Required.
	Nodes, Pods Lister
	// Scrape reads a path of a node's agent (nodeproxy.Proxy.Get).
	// Required.
	Scrape func(ctx context.Context, nodeName, path string) ([]byte, error)
	// Resolution is how often the agents are read; DefaultResolution
	// when zero.
	Resolution time.Duration
}

// API is the metrics API: Run fills it, requests read it.
type API struct {
	opts Options
	// state is the last computation: written by Run only.
	state atomic.Pointer[served]
}

// served is a snapshot with the labels of its nodes and pods.
type served struct {
	snapshot
	nodeLabels map[string]map[string]string
	podLabels  map[string]map[string]string // by namespace/name
}

// New returns an API; Run fills it.
func New(opts Options) (*API, error) {
	if opts.Nodes == nil || opts.Pods == nil || opts.Scrape == nil {
		return nil, errors.New("metricsapi: Nodes, Pods and Scrape are required")
	}
	if opts.Resolution <= 0 {
		opts.Resolution = DefaultResolution
	}
	a := &API{opts: opts}
	a.state.Store(&served{snapshot: snapshot{nodes: map[string]metricsv1beta1.NodeMetrics{}, pods: map[string]map[string]metricsv1beta1.PodMetrics{}}})
	return a, nil
}

// Run reads every node's agent each Resolution until ctx ends.
func (a *API) Run(ctx context.Context) {
	prev := points{}
	ticker := time.NewTicker(a.opts.Resolution)
	defer ticker.Stop()
	for {
		prev = a.round(ctx, prev)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// round scrapes every node at once (each bounded by the resolution) and
// publishes what compute makes of it.
func (a *API) round(ctx context.Context, prev points) points {
	log := klog.FromContext(ctx)
	nodeList, err := a.opts.Nodes.List(ctx, "", &metainternalversion.ListOptions{ResourceVersion: "0"})
	if err != nil {
		log.Error(err, "Metrics: listing nodes")
		return prev
	}
	nodes := nodeList.(*corev1.NodeList).Items
	sums := make([]*statsapi.Summary, len(nodes))
	ctx2, cancel := context.WithTimeout(ctx, a.opts.Resolution)
	defer cancel()
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() {
			body, err := a.opts.Scrape(ctx2, nodes[i].Name, "/stats/summary")
			if err != nil {
				log.V(2).Info("Metrics: scraping a node", "node", nodes[i].Name, "err", err)
				return
			}
			var s statsapi.Summary
			if err := json.Unmarshal(body, &s); err != nil {
				log.V(2).Info("Metrics: a node's summary", "node", nodes[i].Name, "err", err)
				return
			}
			sums[i] = &s
		})
	}
	wg.Wait()
	next, snap := compute(prev, sums)
	out := &served{snapshot: snap, nodeLabels: map[string]map[string]string{}, podLabels: map[string]map[string]string{}}
	for _, n := range nodes {
		out.nodeLabels[n.Name] = n.Labels
	}
	if podList, err := a.opts.Pods.List(ctx, "", &metainternalversion.ListOptions{ResourceVersion: "0"}); err == nil {
		for _, p := range podList.(*corev1.PodList).Items {
			if _, ok := snap.pods[p.Namespace][p.Name]; ok {
				out.podLabels[p.Namespace+"/"+p.Name] = p.Labels
			}
		}
	}
	a.state.Store(out)
	return next
}

// Proxy implements the apiserver's Remote: the API's handler for
// metrics.k8s.io/v1beta1.
func (a *API) Proxy(gv schema.GroupVersion) http.Handler {
	if gv == GroupVersion {
		return a
	}
	return nil
}

// Groups implements the apiserver's Remote.
func (a *API) Groups() []metav1.APIGroup {
	v := metav1.GroupVersionForDiscovery{GroupVersion: GroupVersion.String(), Version: GroupVersion.Version}
	return []metav1.APIGroup{{Name: GroupVersion.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v}}
}

// GroupPriority implements the apiserver's Remote: metrics-server's
// APIService (v1beta1.metrics.k8s.io, groupPriorityMinimum 100), which
// this API stands for.
func (a *API) GroupPriority(group string) (int32, string, bool) {
	if group != GroupVersion.Group {
		return 0, "", false
	}
	return 100, GroupVersion.Version + "." + GroupVersion.Group, true
}

var resources = []metav1.APIResource{
	{Name: "nodes", Kind: "NodeMetrics", Verbs: []string{"get", "list"}},
	{Name: "pods", Kind: "PodMetrics", Namespaced: true, Verbs: []string{"get", "list"}},
}

// Discovery implements the apiserver's Remote.
func (a *API) Discovery() []apidiscoveryv2.APIGroupDiscovery {
	var rs []apidiscoveryv2.APIResourceDiscovery
	for _, r := range resources {
		scope := apidiscoveryv2.ScopeCluster
		if r.Namespaced {
			scope = apidiscoveryv2.ScopeNamespace
		}
		rs = append(rs, apidiscoveryv2.APIResourceDiscovery{Resource: r.Name, Scope: scope, Verbs: r.Verbs,
			ResponseKind: &metav1.GroupVersionKind{Group: GroupVersion.Group, Version: GroupVersion.Version, Kind: r.Kind}})
	}
	return []apidiscoveryv2.APIGroupDiscovery{{ObjectMeta: metav1.ObjectMeta{Name: GroupVersion.Group},
		Versions: []apidiscoveryv2.APIVersionDiscovery{{Version: GroupVersion.Version, Resources: rs, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}}}}
}

// ServeHTTP answers get and list of nodes and pods (the request is
// authenticated and authorized already).
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest := strings.Trim(strings.TrimPrefix(r.URL.Path, "/apis/"+GroupVersion.String()), "/")
	parts := strings.Split(rest, "/")
	if rest == "" {
		parts = nil
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeStatus(w, apierrors.NewMethodNotSupported(schema.GroupResource{Group: GroupVersion.Group, Resource: firstOr(parts, "")}, r.Method))
		return
	}
	sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
	if err != nil {
		writeStatus(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	if watch := r.URL.Query().Get("watch"); watch == "true" || watch == "1" {
		writeStatus(w, apierrors.NewMethodNotSupported(schema.GroupResource{Group: GroupVersion.Group, Resource: firstOr(parts, "")}, "watch"))
		return
	}
	s := a.state.Load()
	switch {
	case len(parts) == 0:
		writeJSON(w, &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: GroupVersion.String(), APIResources: resources})
	case len(parts) == 1 && parts[0] == "nodes":
		list := &metricsv1beta1.NodeMetricsList{TypeMeta: typeMeta("NodeMetricsList"), Items: []metricsv1beta1.NodeMetrics{}}
		for _, name := range sortedKeys(s.nodes) {
			if sel.Matches(labels.Set(s.nodeLabels[name])) {
				list.Items = append(list.Items, s.node(name))
			}
		}
		writeJSON(w, list)
	case len(parts) == 2 && parts[0] == "nodes":
		if _, ok := s.nodes[parts[1]]; !ok {
			writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: GroupVersion.Group, Resource: "nodes"}, parts[1]))
			return
		}
		m := s.node(parts[1])
		writeJSON(w, &m)
	case len(parts) == 1 && parts[0] == "pods", len(parts) == 3 && parts[0] == "namespaces" && parts[2] == "pods":
		ns := ""
		if len(parts) == 3 {
			ns = parts[1]
		}
		list := &metricsv1beta1.PodMetricsList{TypeMeta: typeMeta("PodMetricsList"), Items: []metricsv1beta1.PodMetrics{}}
		for _, n := range sortedKeys(s.pods) {
			if ns != "" && n != ns {
				continue
			}
			for _, name := range sortedKeys(s.pods[n]) {
				if sel.Matches(labels.Set(s.podLabels[n+"/"+name])) {
					list.Items = append(list.Items, s.pod(n, name))
				}
			}
		}
		writeJSON(w, list)
	case len(parts) == 4 && parts[0] == "namespaces" && parts[2] == "pods":
		if _, ok := s.pods[parts[1]][parts[3]]; !ok {
			writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: GroupVersion.Group, Resource: "pods"}, parts[1]+"/"+parts[3]))
			return
		}
		m := s.pod(parts[1], parts[3])
		writeJSON(w, &m)
	default:
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{}, ""))
	}
}

func (s *served) node(name string) metricsv1beta1.NodeMetrics {
	m := s.nodes[name]
	m.TypeMeta = typeMeta("NodeMetrics")
	m.Labels = s.nodeLabels[name]
	m.CreationTimestamp = metav1.Now()
	return m
}

func (s *served) pod(namespace, name string) metricsv1beta1.PodMetrics {
	m := s.pods[namespace][name]
	m.TypeMeta = typeMeta("PodMetrics")
	m.Labels = s.podLabels[namespace+"/"+name]
	m.CreationTimestamp = metav1.Now()
	return m
}

func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{Kind: kind, APIVersion: GroupVersion.String()}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func firstOr(parts []string, def string) string {
	if len(parts) > 0 {
		return parts[0]
	}
	return def
}

func writeJSON(w http.ResponseWriter, obj any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(obj); err != nil {
		klog.V(4).Info("Metrics: writing a response", "err", err)
	}
}

func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	st := err.Status()
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	json.NewEncoder(w).Encode(&st)
}
