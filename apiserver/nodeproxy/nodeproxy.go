package nodeproxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	upgradeproxy "k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/apimachinery/pkg/util/validation/field"
	translator "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/klog/v2"
	"k8s.io/streaming/pkg/httpstream/wsstream"

	"github.com/kite-project/kite/apis/core/options"
)

// logBuffer is how much of a log is read from the agent before it is
// written on.
const logBuffer = 256 << 10

// DefaultKubeletPort is used when a Node reports no daemon endpoint port.
const DefaultKubeletPort = 10250

// Getter reads an object, as registry.Store.Get does (errors are API errors).
type Getter interface {
	Get(ctx context.Context, namespace, name string, opts *metav1.GetOptions) (runtime.Object, error)
}

// Options configure a Proxy.
type Options struct {
	// Pods and Nodes read the pod and its node. Required.
	Pods, Nodes Getter
	// ClientCertificate is presented to agents.
	ClientCertificate tls.Certificate
	// DialTimeout bounds the connection to an agent; 0 means 10 s.
	DialTimeout time.Duration
	// KubeletCAs verify agents' serving certificates
	// (--kubelet-certificate-authority); nil verifies none, as
	// kube-apiserver without the flag.
	KubeletCAs *x509.CertPool
	// RequireKubeletCA refuses a serving certificate KubeletCAs did not
	// issue. Without it only the certificates they issued are verified
	// (chain, validity, the dialed address), and one of an unknown
	// authority (an agent's self-signed one) is let through unverified.
	RequireKubeletCA bool
}

// Proxy serves the streaming subresources of pods.
type Proxy struct {
	opts Options
	// transport is the template of the transports to each agent: a
	// serving certificate is checked against the address dialed, which
	// a shared TLS configuration does not know for upgrades.
	transport *http.Transport
	// proxyTransport reaches pods and services for the proxy subresources.
	proxyTransport *http.Transport
	// services and slices resolve services/proxy (ServeServices).
	services Getter
	slices   Lister
	mu       sync.Mutex
	byHost   map[string]*http.Transport
}

// New builds a Proxy.
func New(opts Options) (*Proxy, error) {
	if opts.Pods == nil || opts.Nodes == nil {
		return nil, errors.New("nodeproxy: pods and nodes getters are required")
	}
	if opts.DialTimeout == 0 {
		opts.DialTimeout = 10 * time.Second
	}
	// The verification is VerifyAgentCertificate's, in each host's
	// transport (transportFor); Go's own would refuse every certificate
	// of an unknown authority.
	tlsConfig := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12, //nolint:gosec
		Certificates: []tls.Certificate{opts.ClientCertificate}}
	t := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: opts.DialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     tlsConfig,
		TLSHandshakeTimeout: opts.DialTimeout,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
	}
	return &Proxy{opts: opts, transport: t, proxyTransport: newProxyTransport(opts.DialTimeout), byHost: map[string]*http.Transport{}}, nil
}

// Close drops idle connections to agents, pods and services.
func (p *Proxy) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.transport.CloseIdleConnections()
	p.proxyTransport.CloseIdleConnections()
	for _, t := range p.byHost {
		t.CloseIdleConnections()
	}
}

// transportFor is the transport to the agent at u, whose serving
// certificate VerifyAgentCertificate checks for u's host.
func (p *Proxy) transportFor(u *url.URL) *http.Transport {
	if p.opts.KubeletCAs == nil {
		return p.transport
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if t, ok := p.byHost[u.Host]; ok {
		return t
	}
	t := p.transport.Clone()
	host := u.Hostname()
	t.TLSClientConfig.VerifyConnection = func(cs tls.ConnectionState) error {
		return VerifyAgentCertificate(cs.PeerCertificates, host, p.opts.KubeletCAs, p.opts.RequireKubeletCA, time.Now())
	}
	p.byHost[u.Host] = t
	return t
}

// VerifyAgentCertificate is the API server's check of an agent's serving
// certificate chain (leaf first) when it dials host: one that roots
// issued must be valid now, for server auth and for host (its IP or DNS
// name); one of an unknown authority is refused if required, else let
// through, as kube-apiserver without --kubelet-certificate-authority
// lets every certificate through.
func VerifyAgentCertificate(chain []*x509.Certificate, host string, roots *x509.CertPool, required bool, now time.Time) error {
	if len(chain) == 0 {
		return errors.New("the agent presented no serving certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	var unknown x509.UnknownAuthorityError
	switch {
	case errors.As(err, &unknown) && !required:
		return nil
	case err != nil:
		return fmt.Errorf("the agent's serving certificate: %w", err)
	}
	if err := chain[0].VerifyHostname(host); err != nil {
		return fmt.Errorf("the agent's serving certificate: %w", err)
	}
	return nil
}

// Handles says whether p serves a subresource of a resource.
func (p *Proxy) Handles(resource, subresource string) bool {
	if subresource == "proxy" {
		return resource == "pods" || resource == "nodes" || resource == "services"
	}
	if resource != "pods" {
		return false
	}
	switch subresource {
	case "log", "exec", "attach", "portforward":
		return true
	}
	return false
}

// Serve serves one subresource request (path: what follows a proxy
// subresource); an error returned was not yet written, and is for the
// caller to write as a Status.
func (p *Proxy) Serve(w http.ResponseWriter, r *http.Request, resource, namespace, name, subresource, path string) error {
	switch subresource {
	case "proxy":
		return p.serveProxy(w, r, resource, namespace, name, path)
	case "log":
		if r.Method != http.MethodGet {
			return apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "pods/log"}, r.Method)
		}
		return p.log(w, r, namespace, name)
	case "exec", "attach":
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			return apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "pods/" + subresource}, r.Method)
		}
		return p.remoteCommand(w, r, namespace, name, subresource)
	case "portforward":
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			return apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "pods/portforward"}, r.Method)
		}
		return p.portForward(w, r, namespace, name)
	}
	return apierrors.NewNotFound(schema.GroupResource{Resource: "pods/" + subresource}, name)
}

func (p *Proxy) pod(ctx context.Context, namespace, name string) (*v1.Pod, error) {
	obj, err := p.opts.Pods.Get(ctx, namespace, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("pods store returned %T", obj))
	}
	return pod, nil
}

// nodeURL is the agent's base URL for a node: its InternalIP (else its
// first address) and its daemon endpoint port.
func (p *Proxy) nodeURL(ctx context.Context, nodeName string) (*url.URL, error) {
	obj, err := p.opts.Nodes.Get(ctx, "", nodeName, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	node, ok := obj.(*v1.Node)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("nodes store returned %T", obj))
	}
	host := ""
	for _, t := range []v1.NodeAddressType{v1.NodeInternalIP, v1.NodeHostName, v1.NodeInternalDNS, v1.NodeExternalDNS, v1.NodeExternalIP} {
		for _, a := range node.Status.Addresses {
			if a.Type == t && host == "" {
				host = a.Address
			}
		}
	}
	if host == "" {
		return nil, apierrors.NewInternalError(fmt.Errorf("node %s has no address", nodeName)) // upstream's NoMatchError text differs
	}
	port := int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)
	if port <= 0 {
		port = DefaultKubeletPort
	}
	return &url.URL{Scheme: "https", Host: net.JoinHostPort(host, strconv.Itoa(port))}, nil
}

// containerFor is the container a request names, defaulted as upstream's
// validateContainer (pkg/registry/core/pod/strategy.go): the only one,
// else an error that lists every container, init, regular and ephemeral
// in that order (podutil.VisitContainers), as one list.
func containerFor(pod *v1.Pod, container string) (string, error) {
	var all []string
	for _, c := range pod.Spec.InitContainers {
		all = append(all, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		all = append(all, c.Name)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		all = append(all, c.Name)
	}
	if container == "" {
		switch len(pod.Spec.Containers) {
		case 1:
			return pod.Spec.Containers[0].Name, nil
		case 0:
			return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s", pod.Name))
		}
		return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %s", pod.Name, all))
	}
	if slices.Contains(all, container) {
		return container, nil
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", container, pod.Name))
}

// ValidateLogOptions is upstream's ValidatePodLogOptions.
func ValidateLogOptions(o *v1.PodLogOptions) field.ErrorList {
	var errs field.ErrorList
	if o.TailLines != nil && *o.TailLines < 0 {
		errs = append(errs, field.Invalid(field.NewPath("tailLines"), *o.TailLines, "must be greater than or equal to 0"))
	}
	if o.LimitBytes != nil && *o.LimitBytes < 1 {
		errs = append(errs, field.Invalid(field.NewPath("limitBytes"), *o.LimitBytes, "must be greater than 0"))
	}
	switch {
	case o.SinceSeconds != nil && o.SinceTime != nil:
		errs = append(errs, field.Forbidden(field.NewPath(""), "at most one of `sinceTime` or `sinceSeconds` may be specified"))
	case o.SinceSeconds != nil && *o.SinceSeconds < 1:
		errs = append(errs, field.Invalid(field.NewPath("sinceSeconds"), *o.SinceSeconds, "must be greater than 0"))
	}
	return errs
}

func (p *Proxy) log(w http.ResponseWriter, r *http.Request, namespace, name string) error {
	opts, err := options.Log(r.URL.Query())
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if errs := ValidateLogOptions(opts); len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "PodLogOptions"}, name, errs)
	}
	pod, err := p.pod(r.Context(), namespace, name)
	if err != nil {
		return err
	}
	container, err := containerFor(pod, opts.Container)
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		// Not scheduled: an empty log, as upstream.
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		return nil
	}
	loc, err := p.nodeURL(r.Context(), pod.Spec.NodeName)
	if err != nil {
		return err
	}
	loc.Path = "/containerLogs/" + url.PathEscape(namespace) + "/" + url.PathEscape(name) + "/" + url.PathEscape(container)
	q := url.Values{}
	if opts.Follow {
		q.Set("follow", "true")
	}
	if opts.Previous {
		q.Set("previous", "true")
	}
	if opts.Timestamps {
		q.Set("timestamps", "true")
	}
	if opts.SinceSeconds != nil {
		q.Set("sinceSeconds", strconv.FormatInt(*opts.SinceSeconds, 10))
	}
	if opts.SinceTime != nil {
		q.Set("sinceTime", opts.SinceTime.Format(time.RFC3339))
	}
	if opts.TailLines != nil {
		q.Set("tailLines", strconv.FormatInt(*opts.TailLines, 10))
	}
	if opts.LimitBytes != nil {
		q.Set("limitBytes", strconv.FormatInt(*opts.LimitBytes, 10))
	}
	loc.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, loc.String(), nil)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	resp, err := p.transportFor(loc).RoundTrip(req)
	if err != nil {
		// What kube-apiserver's LocationStreamer returns: a plain
		// error, a 500 Status without reason.
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
			Message: fmt.Sprintf("Get %q: %v", loc.String(), unwrapURL(err))}}
	}
	defer resp.Body.Close()
	if err := checkResponse(resp, name); err != nil {
		return err
	}
	if wsstream.IsWebSocketRequest(r) {
		// As kube-apiserver's StreamObject: a client that asks for a
		// websocket (browsers, the conformance suite) gets the log as its
		// messages, in the protocol it chose (binary.k8s.io,
		// base64.k8s.io), pinged so that proxies keep it open.
		if err := wsstream.NewReader(resp.Body, true, wsstream.NewDefaultReaderProtocols()).Copy(w, r); err != nil {
			klog.FromContext(r.Context()).Error(err, "Streaming a pod's log over a websocket", "pod", klog.KRef(namespace, name), "container", container)
		}
		return nil
	}
	w.Header().Set("Content-Type", "text/plain")
	if !opts.Follow {
		w.Header().Del("Content-Length")
	}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	buf := make([]byte, logBuffer)
	for {
		var n int
		var rerr error
		if opts.Follow {
			// What came, at once.
			n, rerr = resp.Body.Read(buf)
		} else {
			// Whole buffers: a TLS read returns one 16 KiB record, and
			// each write to an HTTP/2 client is a hand-off to its
			// connection's goroutine, so fewer, larger writes cost less.
			n, rerr = io.ReadFull(resp.Body, buf)
		}
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				return nil
			}
			if opts.Follow {
				rc.Flush()
			}
		}
		if rerr != nil {
			return nil
		}
	}
}

func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// checkResponse is GenericHttpResponseChecker: an agent's refusal
// becomes the Status upstream makes of it.
func checkResponse(resp *http.Response, name string) error {
	if resp.StatusCode >= 200 && resp.StatusCode <= 206 {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 50000))
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	text := strings.TrimSuffix(string(body), "\n")
	switch resp.StatusCode {
	case http.StatusInternalServerError:
		return apierrors.NewInternalError(errors.New(text))
	case http.StatusBadRequest:
		return apierrors.NewBadRequest(text)
	}
	return apierrors.NewGenericServerResponse(resp.StatusCode, "", schema.GroupResource{Resource: "pods/log"}, name, text, 0, false)
}

func (p *Proxy) streamLocation(ctx context.Context, pod *v1.Pod, container, path string) (*url.URL, error) {
	if pod.Spec.NodeName == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name))
	}
	loc, err := p.nodeURL(ctx, pod.Spec.NodeName)
	if err != nil {
		return nil, err
	}
	loc.Path = "/" + path + "/" + url.PathEscape(pod.Namespace) + "/" + url.PathEscape(pod.Name)
	if container != "" {
		loc.Path += "/" + url.PathEscape(container)
	}
	return loc, nil
}

func (p *Proxy) remoteCommand(w http.ResponseWriter, r *http.Request, namespace, name, subresource string) error {
	var stdin, stdout, stderr, tty bool
	var container string
	var command []string
	if subresource == "exec" {
		o := options.Exec(r.URL.Query())
		stdin, stdout, stderr, tty, container, command = o.Stdin, o.Stdout, o.Stderr, o.TTY, o.Container, o.Command
		if len(command) == 0 {
			return apierrors.NewBadRequest("you must specify at least one command for the container")
		}
	} else {
		o := options.Attach(r.URL.Query())
		stdin, stdout, stderr, tty, container = o.Stdin, o.Stdout, o.Stderr, o.TTY, o.Container
	}
	if !stdin && !stdout && !stderr {
		return apierrors.NewBadRequest("you must specify at least 1 of stdin, stdout, stderr")
	}
	pod, err := p.pod(r.Context(), namespace, name)
	if err != nil {
		return err
	}
	if container, err = containerFor(pod, container); err != nil {
		return err
	}
	loc, err := p.streamLocation(r.Context(), pod, container, subresource)
	if err != nil {
		return err
	}
	q := url.Values{}
	for k, on := range map[string]bool{"input": stdin, "output": stdout, "error": stderr, "tty": tty} {
		if on {
			q.Set(k, "1")
		}
	}
	for _, c := range command {
		q.Add("command", c)
	}
	loc.RawQuery = q.Encode()
	var h http.Handler = p.upgradeHandler(loc)
	sto := translator.Options{Stdin: stdin, Stdout: stdout, Stderr: stderr, Tty: tty}
	h = translator.NewTranslatingHandler(h, translator.NewStreamTranslatorHandler(loc, p.transportFor(loc), 0, sto), wsstream.IsWebSocketRequestWithStreamCloseProtocol)
	h.ServeHTTP(w, r)
	return nil
}

func (p *Proxy) portForward(w http.ResponseWriter, r *http.Request, namespace, name string) error {
	o, err := options.PortForward(r.URL.Query())
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	pod, err := p.pod(r.Context(), namespace, name)
	if err != nil {
		return err
	}
	loc, err := p.streamLocation(r.Context(), pod, "", "portForward")
	if err != nil {
		return err
	}
	if len(o.Ports) > 0 {
		ports := make([]string, len(o.Ports))
		for i, port := range o.Ports {
			ports[i] = strconv.Itoa(int(port))
		}
		loc.RawQuery = url.Values{"port": {strings.Join(ports, ",")}}.Encode()
	}
	up := p.upgradeHandler(loc)
	h := translator.NewTranslatingHandler(up, translator.NewTunnelingHandler(up), wsstream.IsWebSocketRequestWithTunnelingProtocol)
	h.ServeHTTP(w, r)
	return nil
}

func (p *Proxy) upgradeHandler(loc *url.URL) *upgradeproxy.UpgradeAwareHandler {
	h := upgradeproxy.NewUpgradeAwareHandler(loc, p.transportFor(loc), false, true, responder{})
	h.MaxBytesPerSec = 0
	return h
}

// responder writes a proxy error as kube-apiserver does: a 500 Status.
type responder struct{}

func (responder) Error(w http.ResponseWriter, _ *http.Request, err error) {
	WriteStatus(w, apierrors.NewInternalError(err))
}
