package kite

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	netutils "k8s.io/utils/net"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/controllers/clusterdns"
	"github.com/kite-project/kite/registry"
)

// ClusterDNSOptions configure the cluster DNS server that runs beside the
// controllers (docs/dns.md) and its kube-dns Service.
type ClusterDNSOptions struct {
	// Addr is host:port the DNS server serves UDP and TCP on (port 0: a
	// free one); "" runs none and makes no kube-dns Service (the
	// embedded default; kite server's --cluster-dns-addr).
	Addr string
	// Domain is the cluster domain (--cluster-domain); "" is
	// cluster.local.
	Domain string
	// Upstreams are the resolvers names outside the domain go to; nil
	// means the host's /etc/resolv.conf, empty (not nil) none.
	Upstreams []string
	// Optional makes a failure to listen on Addr a logged line, the server
	// running without cluster DNS, instead of a failed start (kite
	// server's automatic address, which another process may hold).
	Optional bool
	// MetricsAddr is host:port the DNS serves Prometheus metrics on
	// (CoreDNS's names; kite server's --cluster-dns-metrics-addr, the
	// DNS's host on port 9153 by default); "" serves none.
	// MetricsOptional runs the DNS without metrics when it cannot be
	// listened on.
	MetricsAddr     string
	MetricsOptional bool
}

// clusterDNS is the running DNS server, if any.
type clusterDNS struct {
	dns  *clusterdns.DNS
	stop func()
	// err is why an optional DNS does not run.
	err error
}

// KubeDNSServiceName is the cluster DNS's Service in kube-system, named
// as kubeadm's CoreDNS addon names it for compatibility.
const KubeDNSServiceName = "kube-dns"

// startClusterDNS runs the cluster DNS server under the server's life and
// makes its kube-dns Service, with the EndpointSlice (and Endpoints) that
// point at it, as the API server makes the kubernetes Service's.
func (s *Server) startClusterDNS(ctx context.Context, opts Options) error {
	o := opts.ClusterDNS
	if o.Addr == "" {
		return nil
	}
	cs, err := kubernetes.NewForConfig(s.RESTConfig())
	if err != nil {
		return err
	}
	dnsConfig, err := s.clusterDNSConfig(ctx, cs)
	if err != nil {
		return err
	}
	dnsClient, err := kubernetes.NewForConfig(dnsConfig)
	if err != nil {
		return err
	}
	dopts := clusterdns.Options{Client: dnsClient, Domain: o.Domain, Addr: o.Addr, Upstreams: o.Upstreams, MetricsAddr: o.MetricsAddr}
	d, err := clusterdns.New(dopts)
	if err != nil && o.MetricsAddr != "" && o.MetricsOptional {
		// The DNS without its metrics rather than none.
		dopts.MetricsAddr = ""
		if d, err = clusterdns.New(dopts); err == nil {
			klog.FromContext(ctx).V(1).Info("Cluster DNS runs without metrics: their address is taken", "address", o.MetricsAddr)
		}
	}
	if err != nil {
		if !o.Optional {
			return err
		}
		s.clusterDNS.err = err
		klog.FromContext(ctx).V(1).Info("Running without cluster DNS", "err", err)
		return s.ensureKubeDNSService(ctx, "", 0, 0)
	}
	dctx, cancel := context.WithCancel(s.runCtx)
	var wg sync.WaitGroup
	wg.Go(func() { d.Run(klog.NewContext(dctx, klog.FromContext(ctx))) })
	s.clusterDNS = clusterDNS{dns: d, stop: func() { cancel(); wg.Wait() }}
	host, portStr, _ := net.SplitHostPort(d.Addr())
	port, _ := strconv.Atoi(portStr)
	ip := net.ParseIP(host)
	if ip == nil || ip.IsUnspecified() {
		if ip, err = utilnet.ResolveBindAddress(ip); err != nil {
			klog.FromContext(ctx).V(1).Info("No address to advertise in the kube-dns Service's endpoints", "err", err)
			ip = nil
		}
	}
	advertise := ""
	switch {
	case ip == nil:
	case ip.IsLoopback():
		// Endpoints may not be loopback addresses (upstream's
		// validation), and pods in their own network namespace could not
		// reach one: a DNS server on 127.0.0.1 serves this host alone.
		klog.FromContext(ctx).V(1).Info("The cluster DNS listens on a loopback address: the kube-dns Service gets no endpoint", "address", d.Addr())
	default:
		advertise = ip.String()
	}
	// The metrics port is an endpoint where the metrics listen on the
	// advertised address (or every address).
	metricsPort := 0
	if mhost, mport, err := net.SplitHostPort(d.MetricsAddr()); err == nil && advertise != "" {
		if mip := net.ParseIP(mhost); mip != nil && (mip.IsUnspecified() || mip.Equal(ip)) {
			metricsPort, _ = strconv.Atoi(mport)
		}
	}
	return s.ensureKubeDNSService(ctx, advertise, int32(port), int32(metricsPort))
}

// ClusterDNSMetricsAddr is the address the cluster DNS serves its
// metrics on (host:port), "" when none.
func (s *Server) ClusterDNSMetricsAddr() string {
	if s.clusterDNS.dns == nil {
		return ""
	}
	return s.clusterDNS.dns.MetricsAddr()
}

// ClusterDNSAddr is the address the cluster DNS serves on (host:port),
// "" when it runs none.
func (s *Server) ClusterDNSAddr() string {
	if s.clusterDNS.dns == nil {
		return ""
	}
	return s.clusterDNS.dns.Addr()
}

// ClusterDNSErr is why the cluster DNS does not run although asked to
// (ClusterDNSOptions.Optional: its address was taken), nil otherwise.
func (s *Server) ClusterDNSErr() error { return s.clusterDNS.err }

// stopClusterDNS stops the DNS server and waits for it.
func (s *Server) stopClusterDNS() {
	if s.clusterDNS.stop != nil {
		s.clusterDNS.stop()
	}
}

// ensureKubeDNSService makes (or puts right) kube-system/kube-dns as
// kubeadm's CoreDNS addon has it: the tenth address of the primary
// service range, ports dns 53/UDP, dns-tcp 53/TCP and metrics 9153/TCP,
// label k8s-app=kube-dns; without a selector, with an EndpointSlice and
// Endpoints of ip:port (none when ip is ""; the metrics at ip:metricsPort
// unless it is 0), managed here.
func (s *Server) ensureKubeDNSService(ctx context.Context, ip string, port, metricsPort int32) error {
	clusterIP, err := clusterdns.ServiceIP(s.services.CIDRs()[0].String())
	if err != nil {
		return err
	}
	if port == 0 {
		port = 53
	}
	want := kubeDNSService(clusterIP, port, metricsPort)
	store := s.resources.Store("services")
	obj, err := store.Get(ctx, metav1.NamespaceSystem, KubeDNSServiceName, &metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = store.Create(ctx, metav1.NamespaceSystem, want, &metav1.CreateOptions{FieldManager: "kite"})
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	case err == nil:
		if cur := obj.(*v1.Service); !equality.Semantic.DeepEqual(cur.Spec.Ports, want.Spec.Ports) {
			_, _, err = store.Update(ctx, &registry.UpdateRequest{Namespace: metav1.NamespaceSystem, Name: KubeDNSServiceName,
				Options: metav1.UpdateOptions{FieldManager: "kite"},
				Object: func(_ context.Context, existing runtime.Object) (runtime.Object, error) {
					svc := existing.(*v1.Service)
					svc.Spec.Ports = want.Spec.Ports
					return svc, nil
				}})
		}
	}
	if err != nil {
		return fmt.Errorf("the kube-dns Service: %w", err)
	}
	ep, slice := kubeDNSEndpoints(ip, port, metricsPort)
	if err := put(ctx, s.resources.Store("endpoints"), ep); err != nil {
		return fmt.Errorf("the kube-dns Endpoints: %w", err)
	}
	if err := put(ctx, s.resources.Store("endpointslices.discovery.k8s.io"), slice); err != nil {
		return fmt.Errorf("the kube-dns EndpointSlice: %w", err)
	}
	return nil
}

// kubeDNSService is kubeadm's kube-dns Service, without a selector: its
// endpoints are the DNS server of this process, at targetPort, and its
// metrics at metricsPort (0: 9153, where there are none).
func kubeDNSService(ip string, targetPort, metricsPort int32) *v1.Service {
	if metricsPort == 0 {
		metricsPort = clusterdns.DefaultMetricsPort
	}
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: KubeDNSServiceName, Namespace: metav1.NamespaceSystem,
			Labels: map[string]string{"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS"}},
		Spec: v1.ServiceSpec{
			Type:      v1.ServiceTypeClusterIP,
			ClusterIP: ip,
			Ports: []v1.ServicePort{
				{Name: "dns", Protocol: v1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(targetPort)},
				{Name: "dns-tcp", Protocol: v1.ProtocolTCP, Port: 53, TargetPort: intstr.FromInt32(targetPort)},
				{Name: "metrics", Protocol: v1.ProtocolTCP, Port: clusterdns.DefaultMetricsPort, TargetPort: intstr.FromInt32(metricsPort)},
			},
		},
	}
}

// kubeDNSEndpoints are the kube-dns Service's Endpoints (not mirrored)
// and EndpointSlice: ip:port over UDP and TCP, and the metrics at
// ip:metricsPort over TCP unless it is 0, ready; no endpoint when ip is
// "".
func kubeDNSEndpoints(ip string, port, metricsPort int32) (*v1.Endpoints, *discoveryv1.EndpointSlice) {
	meta := func(labels map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: KubeDNSServiceName, Namespace: metav1.NamespaceSystem, Labels: labels}
	}
	ep := &v1.Endpoints{ObjectMeta: meta(map[string]string{discoveryv1.LabelSkipMirror: "true", "k8s-app": "kube-dns"})}
	family := discoveryv1.AddressTypeIPv4
	if netutils.IsIPv6String(ip) {
		family = discoveryv1.AddressTypeIPv6
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  meta(map[string]string{discoveryv1.LabelServiceName: KubeDNSServiceName, discoveryv1.LabelManagedBy: "kite", "k8s-app": "kube-dns"}),
		AddressType: family,
		Endpoints:   []discoveryv1.Endpoint{},
		Ports: []discoveryv1.EndpointPort{
			{Name: ptr.To("dns"), Port: ptr.To(port), Protocol: ptr.To(v1.ProtocolUDP)},
			{Name: ptr.To("dns-tcp"), Port: ptr.To(port), Protocol: ptr.To(v1.ProtocolTCP)},
		},
	}
	if ip != "" {
		slice.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}}
		ep.Subsets = []v1.EndpointSubset{{Addresses: []v1.EndpointAddress{{IP: ip}}, Ports: []v1.EndpointPort{
			{Name: "dns", Port: port, Protocol: v1.ProtocolUDP}, {Name: "dns-tcp", Port: port, Protocol: v1.ProtocolTCP}}}}
		if metricsPort != 0 {
			slice.Ports = append(slice.Ports, discoveryv1.EndpointPort{Name: ptr.To("metrics"), Port: ptr.To(metricsPort), Protocol: ptr.To(v1.ProtocolTCP)})
			ep.Subsets[0].Ports = append(ep.Subsets[0].Ports, v1.EndpointPort{Name: "metrics", Port: metricsPort, Protocol: v1.ProtocolTCP})
		}
	}
	return ep, slice
}
