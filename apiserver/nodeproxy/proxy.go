package nodeproxy

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	upgradeproxy "k8s.io/apimachinery/pkg/util/proxy"
	apiproxy "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/klog/v2"
)

// proxyMethods are the methods the proxy subresources take, as
// upstream's ProxyREST.ConnectMethods.
var proxyMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions}

// Lister lists objects, as registry.Store.List does.
type Lister interface {
	List(ctx context.Context, namespace string, opts *metainternalversion.ListOptions) (runtime.Object, error)
}

// ServeServices makes p serve services/proxy: services reads a Service,
// slices lists EndpointSlices. Called once, before p serves.
func (p *Proxy) ServeServices(services Getter, slices Lister) {
	p.services, p.slices = services, slices
}

// newProxyTransport is kube-apiserver's proxy transport (CreateProxyTransport):
// pods' and services' certificates are not verified, and no client
// certificate is presented to them.
func newProxyTransport(dialTimeout time.Duration) *http.Transport {
	return utilnet.SetTransportDefaults(&http.Transport{
		DialContext:     (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as upstream: pods' certificates name no one
	})
}

// serveProxy serves pods/proxy, services/proxy and nodes/proxy as
// upstream's ProxyREST.Connect: it resolves id ("name", "name:port",
// "scheme:name:port") to a location, appends path and proxies every
// method, upgrades included, rewriting links in HTML answers.
func (p *Proxy) serveProxy(w http.ResponseWriter, r *http.Request, resource, namespace, id, path string) error {
	if !slices.Contains(proxyMethods, r.Method) {
		return apierrors.NewMethodNotSupported(schema.GroupResource{Resource: resource + "/proxy"}, r.Method)
	}
	var loc *url.URL
	var rt http.RoundTripper
	var err error
	switch resource {
	case "pods":
		loc, err = p.podLocation(r.Context(), namespace, id)
		rt = p.proxyTransport
	case "services":
		loc, err = p.serviceLocation(r.Context(), namespace, id)
		rt = p.proxyTransport
	case "nodes":
		loc, rt, err = p.nodeLocation(r.Context(), id)
	default:
		return apierrors.NewNotFound(schema.GroupResource{Resource: resource + "/proxy"}, id)
	}
	if err != nil {
		return err
	}
	loc.Path = utilnet.JoinPreservingTrailingSlash(loc.Path, path)
	h := upgradeproxy.NewUpgradeAwareHandler(loc, rt, true, false, proxyResponder{})
	h.ServeHTTP(w, r)
	return nil
}

// podLocation is upstream's pod.ResourceLocation: the pod's first IP, the
// port asked for or else the first declared container port.
func (p *Proxy) podLocation(ctx context.Context, namespace, id string) (*url.URL, error) {
	scheme, name, port, valid := utilnet.SplitSchemeNamePort(id)
	if !valid {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid pod request %q", id))
	}
	pod, err := p.pod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return podProxyLocation(pod, scheme, port)
}

// podProxyLocation is where a pod is proxied to: its first IP, the port
// asked for or else the first declared container port, none: the
// scheme's.
func podProxyLocation(pod *v1.Pod, scheme, port string) (*url.URL, error) {
	if port == "" {
		for _, c := range pod.Spec.Containers {
			if len(c.Ports) > 0 {
				port = strconv.Itoa(int(c.Ports[0].ContainerPort))
				break
			}
		}
	}
	podIP := pod.Status.PodIP
	if len(pod.Status.PodIPs) > 0 {
		podIP = pod.Status.PodIPs[0].IP
	}
	ip := net.ParseIP(podIP)
	if ip == nil || !ip.IsGlobalUnicast() {
		// Upstream refuses loopback and link-local pod IPs, so that a
		// pod's status cannot point the API server at its own host.
		return nil, apierrors.NewBadRequest("address not allowed")
	}
	loc := &url.URL{Scheme: scheme, Host: podIP}
	if ip.To4() == nil {
		loc.Host = "[" + podIP + "]"
	}
	if port != "" {
		loc.Host = net.JoinHostPort(podIP, port)
	}
	return loc, nil
}

// serviceLocation is upstream's Service ResourceLocation: a random ready
// endpoint of the named (or numbered) port whose pod has that IP.
func (p *Proxy) serviceLocation(ctx context.Context, namespace, id string) (*url.URL, error) {
	scheme, name, port, valid := utilnet.SplitSchemeNamePort(id)
	if !valid {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid service request %q", id))
	}
	if p.services == nil || p.slices == nil {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
	}
	if num, err := strconv.ParseInt(port, 10, 64); err == nil {
		obj, err := p.services.Get(ctx, namespace, name, &metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		svc, ok := obj.(*v1.Service)
		if !ok {
			return nil, apierrors.NewInternalError(fmt.Errorf("services store returned %T", obj))
		}
		i := slices.IndexFunc(svc.Spec.Ports, func(sp v1.ServicePort) bool { return int64(sp.Port) == num })
		if i < 0 {
			return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", num, name))
		}
		port = svc.Spec.Ports[i].Name
	}
	if namespace == "" {
		return nil, apierrors.NewBadRequest("missing required namespace")
	}
	obj, err := p.slices.List(ctx, namespace, &metainternalversion.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: name})})
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	list, ok := obj.(*discoveryv1.EndpointSliceList)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("endpointslices store returned %T", obj))
	}
	if len(list.Items) == 0 {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
	}
	all := make([]*discoveryv1.EndpointSlice, len(list.Items))
	for i := range list.Items {
		all[i] = &list.Items[i]
	}
	hostPort, err := apiproxy.RandomEndpoint(name, all, port, v1.IPv4Protocol, func(ep *discoveryv1.Endpoint) bool {
		// Only addresses that are the pods' own, as upstream.
		if err := p.validEndpoint(ctx, namespace, ep); err != nil {
			klog.FromContext(ctx).V(4).Info("Skipping an endpoint for the service proxy", "service", klog.KRef(namespace, name), "err", err)
			return false
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	return &url.URL{Scheme: scheme, Host: hostPort}, nil
}

// validEndpoint is upstream's isValidAddress: the endpoint is a pod of
// the Service's namespace that has the endpoint's address.
func (p *Proxy) validEndpoint(ctx context.Context, namespace string, ep *discoveryv1.Endpoint) error {
	if ep.TargetRef == nil {
		return fmt.Errorf("endpoint has no target ref, skipping: %v", ep)
	}
	if ep.TargetRef.Namespace != namespace {
		return errors.New("endpoint namespace doesn't match context namespace")
	}
	pod, err := p.pod(ctx, namespace, ep.TargetRef.Name)
	if err != nil {
		return err
	}
	for _, ip := range pod.Status.PodIPs {
		if len(ep.Addresses) > 0 && ip.IP == ep.Addresses[0] {
			return nil
		}
	}
	return fmt.Errorf("pod ip(s) doesn't match endpoint ip, skipping: %v vs %v (%s/%s)", pod.Status.PodIPs, ep.Addresses, namespace, pod.Name)
}

// nodeLocation is upstream's node.ResourceLocation: the agent's server
// (with the API server's client certificate) unless another port is
// asked for, which is reached as any other address.
func (p *Proxy) nodeLocation(ctx context.Context, id string) (*url.URL, http.RoundTripper, error) {
	scheme, name, port, valid := utilnet.SplitSchemeNamePort(id)
	if !valid {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("invalid node request %q", id))
	}
	agent, err := p.nodeURL(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	host, agentPort, err := net.SplitHostPort(agent.Host)
	if err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	if err := proxyableHost(ctx, host); err != nil {
		return nil, nil, apierrors.NewBadRequest(err.Error())
	}
	if port == "" || port == agentPort {
		return agent, p.transportFor(agent), nil
	}
	return &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, port)}, p.proxyTransport, nil
}

// proxyableHost is upstream's isProxyableHostname: every address of the
// node is a global unicast one.
func proxyableHost(ctx context.Context, host string) error {
	var ips []net.IP
	if ip := net.ParseIP(host); ip != nil {
		ips = []net.IP{ip}
	} else {
		addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
		if err != nil {
			return err
		}
		for _, a := range addrs {
			ips = append(ips, a.IP)
		}
	}
	if len(ips) == 0 {
		return errors.New("no addresses for hostname")
	}
	for _, ip := range ips {
		if !ip.IsGlobalUnicast() {
			return errors.New("address not allowed")
		}
	}
	return nil
}

// proxyResponder writes a proxy's error as upstream's rest responder
// does (ErrorToAPIStatus): an API error as its Status, any other as a 500
// with the error's text and no reason.
type proxyResponder struct{}

func (proxyResponder) Error(w http.ResponseWriter, _ *http.Request, err error) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		writeStatus(w, metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: err.Error()})
		return
	}
	writeStatus(w, status.Status())
}

func writeStatus(w http.ResponseWriter, st metav1.Status) {
	st.Kind, st.APIVersion = "Status", "v1"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	json.NewEncoder(w).Encode(st)
}
