package api_test

import (
	"context"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/kitetest"
)

// The shared server's default ranges. Requested IPs and ports below are
// in the ranges' lower bands, which dynamic allocation leaves alone while
// the upper bands have room, so other tests' services never take them.
var serviceCIDR = netip.MustParsePrefix("10.43.0.0/16")

func service(name string, mutate func(*v1.ServiceSpec)) *v1.Service {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.ServiceSpec{Selector: map[string]string{"app": name}, Ports: []v1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if mutate != nil {
		mutate(&svc.Spec)
	}
	return svc
}

func nodePort(spec *v1.ServiceSpec) { spec.Type = v1.ServiceTypeNodePort }
func clusterIP(ip string) func(*v1.ServiceSpec) {
	return func(spec *v1.ServiceSpec) { spec.ClusterIP = ip }
}

// checkAllocated fails unless svc holds a cluster IP of the range (or
// none, as its type says) and node ports in 30000-32767 where its type
// wants them.
func checkAllocated(t *testing.T, svc *v1.Service) {
	t.Helper()
	switch {
	case svc.Spec.Type == v1.ServiceTypeExternalName:
		if svc.Spec.ClusterIP != "" || len(svc.Spec.ClusterIPs) != 0 || len(svc.Spec.IPFamilies) != 0 {
			t.Errorf("%s: ExternalName has cluster IPs %q %v, families %v", svc.Name, svc.Spec.ClusterIP, svc.Spec.ClusterIPs, svc.Spec.IPFamilies)
		}
	case svc.Spec.ClusterIP == v1.ClusterIPNone:
	default:
		ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
		if err != nil || !serviceCIDR.Contains(ip) || len(svc.Spec.ClusterIPs) != 1 || svc.Spec.ClusterIPs[0] != svc.Spec.ClusterIP {
			t.Errorf("%s: cluster IP %q, IPs %v: want one of %s", svc.Name, svc.Spec.ClusterIP, svc.Spec.ClusterIPs, serviceCIDR)
		}
		if len(svc.Spec.IPFamilies) != 1 || svc.Spec.IPFamilies[0] != v1.IPv4Protocol || ptr.Deref(svc.Spec.IPFamilyPolicy, "") != v1.IPFamilyPolicySingleStack {
			t.Errorf("%s: families %v, policy %v; want [IPv4] SingleStack", svc.Name, svc.Spec.IPFamilies, svc.Spec.IPFamilyPolicy)
		}
	}
	wantNodePorts := svc.Spec.Type == v1.ServiceTypeNodePort ||
		(svc.Spec.Type == v1.ServiceTypeLoadBalancer && ptr.Deref(svc.Spec.AllocateLoadBalancerNodePorts, true))
	for _, p := range svc.Spec.Ports {
		if got := p.NodePort != 0; got != wantNodePorts || (got && (p.NodePort < 30000 || p.NodePort > 32767)) {
			t.Errorf("%s: port %d has node port %d (type %s)", svc.Name, p.Port, p.NodePort, svc.Spec.Type)
		}
	}
}

// TestServicesGetClusterIPsAndNodePortsAsUpstream creates services one
// after the other in a namespace, each step's expectations after the
// ones before, through client-go: what is allocated, what a request for
// a taken or foreign value gets (upstream's messages), and what delete,
// type changes and dry runs give back.
func TestServicesGetClusterIPsAndNodePortsAsUpstream(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := newNamespace(t, client)
	svcs := client.CoreV1().Services(ns)
	ctx := t.Context()
	create := func(svc *v1.Service, dryRun ...string) (*v1.Service, error) {
		return svcs.Create(ctx, svc, metav1.CreateOptions{DryRun: dryRun})
	}
	steps := []struct {
		name string
		run  func() (*v1.Service, error)
		// wantErr is a part of the error's message; "" means none.
		wantErr string
		check   func(t *testing.T, svc *v1.Service)
	}{
		{name: "a ClusterIP service gets an IP of the range", run: func() (*v1.Service, error) { return create(service("plain", nil)) }},
		{name: "a requested IP is given", run: func() (*v1.Service, error) { return create(service("asks", clusterIP("10.43.0.100"))) },
			check: func(t *testing.T, svc *v1.Service) {
				if svc.Spec.ClusterIP != "10.43.0.100" {
					t.Errorf("cluster IP %s, want 10.43.0.100", svc.Spec.ClusterIP)
				}
			}},
		{name: "a taken IP is refused", run: func() (*v1.Service, error) { return create(service("again", clusterIP("10.43.0.100"))) },
			wantErr: `spec.clusterIPs: Invalid value: ["10.43.0.100"]: failed to allocate IP 10.43.0.100: provided IP is already allocated`},
		{name: "an IP outside the range is refused", run: func() (*v1.Service, error) { return create(service("outside", clusterIP("10.0.0.5"))) },
			wantErr: "failed to allocate IP 10.0.0.5: the provided IP (10.0.0.5) is not in the valid range. The range of valid IPs is 10.43.0.0/16"},
		{name: "a dry run takes nothing", run: func() (*v1.Service, error) {
			return create(service("dry", clusterIP("10.43.0.101")), metav1.DryRunAll)
		}},
		{name: "so the IP of the dry run is free", run: func() (*v1.Service, error) { return create(service("after-dry", clusterIP("10.43.0.101"))) }},
		{name: "a deleted service gives its IP back", run: func() (*v1.Service, error) {
			if err := svcs.Delete(ctx, "asks", metav1.DeleteOptions{}); err != nil {
				return nil, err
			}
			return create(service("reuses", clusterIP("10.43.0.100")))
		}},
		{name: "a NodePort service gets node ports", run: func() (*v1.Service, error) { return create(service("np", nodePort)) }},
		{name: "a requested node port is given", run: func() (*v1.Service, error) {
			return create(service("np-asks", func(s *v1.ServiceSpec) { nodePort(s); s.Ports[0].NodePort = 30010 }))
		}},
		{name: "a taken node port is refused", run: func() (*v1.Service, error) {
			return create(service("np-again", func(s *v1.ServiceSpec) { nodePort(s); s.Ports[0].NodePort = 30010 }))
		}, wantErr: "spec.ports[0].nodePort: Invalid value: 30010: provided port is already allocated"},
		{name: "a node port outside the range is refused", run: func() (*v1.Service, error) {
			return create(service("np-outside", func(s *v1.ServiceSpec) { nodePort(s); s.Ports[0].NodePort = 8080 }))
		}, wantErr: "provided port is not in the valid range. The range of valid ports is 30000-32767"},
		{name: "TCP and UDP of one port share a node port", run: func() (*v1.Service, error) {
			return create(service("np-dns", func(s *v1.ServiceSpec) {
				nodePort(s)
				s.Ports = []v1.ServicePort{{Name: "udp", Port: 53, Protocol: v1.ProtocolUDP}, {Name: "tcp", Port: 53, Protocol: v1.ProtocolTCP}}
			}))
		}, check: func(t *testing.T, svc *v1.Service) {
			if a, b := svc.Spec.Ports[0].NodePort, svc.Spec.Ports[1].NodePort; a != b {
				t.Errorf("node ports %d and %d, want one", a, b)
			}
		}},
		{name: "a LoadBalancer with externalTrafficPolicy Local gets a health check node port", run: func() (*v1.Service, error) {
			return create(service("lb", func(s *v1.ServiceSpec) {
				s.Type, s.ExternalTrafficPolicy = v1.ServiceTypeLoadBalancer, v1.ServiceExternalTrafficPolicyLocal
			}))
		}, check: func(t *testing.T, svc *v1.Service) {
			if hc := svc.Spec.HealthCheckNodePort; hc < 30000 || hc > 32767 || hc == svc.Spec.Ports[0].NodePort {
				t.Errorf("health check node port %d (node port %d)", hc, svc.Spec.Ports[0].NodePort)
			}
			if len(svc.Status.LoadBalancer.Ingress) != 0 {
				t.Errorf("load balancer status %v without a load balancer", svc.Status.LoadBalancer)
			}
		}},
		{name: "a LoadBalancer that asks for no node ports gets none", run: func() (*v1.Service, error) {
			return create(service("lb-none", func(s *v1.ServiceSpec) {
				s.Type, s.AllocateLoadBalancerNodePorts = v1.ServiceTypeLoadBalancer, ptr.To(false)
			}))
		}, check: func(t *testing.T, svc *v1.Service) {
			if np := svc.Spec.Ports[0].NodePort; np != 0 {
				t.Errorf("node port %d", np)
			}
		}},
		{name: "headless gets no IP", run: func() (*v1.Service, error) { return create(service("headless", clusterIP(v1.ClusterIPNone))) },
			check: func(t *testing.T, svc *v1.Service) {
				if len(svc.Spec.ClusterIPs) != 1 || svc.Spec.ClusterIPs[0] != v1.ClusterIPNone {
					t.Errorf("cluster IPs %v, want [None]", svc.Spec.ClusterIPs)
				}
			}},
		{name: "ExternalName gets nothing", run: func() (*v1.Service, error) {
			return create(service("external", func(s *v1.ServiceSpec) {
				s.Type, s.ExternalName, s.Selector, s.Ports = v1.ServiceTypeExternalName, "db.example.com", nil, nil
			}))
		}},
		{name: "ClusterIP to NodePort takes node ports, keeps the IP", run: func() (*v1.Service, error) {
			svc, err := svcs.Get(ctx, "reuses", metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			svc.Spec.Type = v1.ServiceTypeNodePort
			svc.Spec.Ports[0].NodePort = 30011
			return svcs.Update(ctx, svc, metav1.UpdateOptions{})
		}, check: func(t *testing.T, svc *v1.Service) {
			if svc.Spec.ClusterIP != "10.43.0.100" || svc.Spec.Ports[0].NodePort != 30011 {
				t.Errorf("IP %s node port %d, want 10.43.0.100 and 30011", svc.Spec.ClusterIP, svc.Spec.Ports[0].NodePort)
			}
		}},
		{name: "NodePort to ClusterIP gives the node port back", run: func() (*v1.Service, error) {
			svc, err := svcs.Get(ctx, "reuses", metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			svc.Spec.Type = v1.ServiceTypeClusterIP
			if svc, err = svcs.Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
				return nil, err
			}
			return create(service("np-reuse", func(s *v1.ServiceSpec) { nodePort(s); s.Ports[0].NodePort = 30011 }))
		}},
		{name: "to ExternalName gives the IP back", run: func() (*v1.Service, error) {
			svc, err := svcs.Get(ctx, "reuses", metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			svc.Spec.Type, svc.Spec.ExternalName, svc.Spec.Selector, svc.Spec.Ports = v1.ServiceTypeExternalName, "db.example.com", nil, nil
			if _, err = svcs.Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
				return nil, err
			}
			return create(service("ip-reuse", clusterIP("10.43.0.100")))
		}},
		{name: "an update cannot take a taken node port", run: func() (*v1.Service, error) {
			svc, err := svcs.Get(ctx, "np", metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			svc.Spec.Ports[0].NodePort = 30010
			return svcs.Update(ctx, svc, metav1.UpdateOptions{})
		}, wantErr: "spec.ports[0].nodePort: Invalid value: 30010: provided port is already allocated"},
	}
	for _, s := range steps {
		svc, err := s.run()
		switch {
		case s.wantErr == "" && err != nil:
			t.Fatalf("%s: %v", s.name, err)
		case s.wantErr != "" && (err == nil || !strings.Contains(err.Error(), s.wantErr)):
			t.Fatalf("%s: error %v, want one saying %q", s.name, err, s.wantErr)
		case s.wantErr != "" && !apierrors.IsInvalid(err):
			t.Fatalf("%s: error %v is no 422 Invalid", s.name, err)
		case err == nil:
			checkAllocated(t, svc)
			if s.check != nil {
				s.check(t, svc)
			}
		}
	}
}

// TestKubectlExposeGetsAClusterIP is the story of a new user: expose a
// Deployment, see its cluster IP and node port in kubectl get, and a
// second NodePort service on the same node port refused with upstream's
// message.
func TestKubectlExposeGetsAClusterIP(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := newNamespace(t, client)
	kubectl(t, "-n", ns, "create", "deployment", "web", "--image=nginx", "--replicas=3")
	kubectl(t, "-n", ns, "expose", "deployment", "web", "--port=80", "--target-port=8080", "--type=NodePort")
	out := kubectl(t, "-n", ns, "get", "svc", "web")
	row := regexp.MustCompile(`(?m)^web\s+NodePort\s+(10\.43\.\d+\.\d+)\s+<none>\s+80:(3\d{4})/TCP\s`).FindStringSubmatch(out)
	if row == nil {
		t.Fatalf("kubectl get svc web:\n%s\nwant a cluster IP of 10.43.0.0/16 and 80:3xxxx/TCP", out)
	}
	msg, err := kubectlErr(t, "-n", ns, "create", "service", "nodeport", "web2", "--tcp=80:8080", "--node-port="+row[2])
	if err == nil {
		t.Fatalf("a second service on node port %s was created", row[2])
	}
	if want := "provided port is already allocated"; !strings.Contains(msg, want) {
		t.Errorf("kubectl says %q, want %q", msg, want)
	}
}

// TestServiceAllocationsSurviveARestart restarts the server under its
// services: the restarted one rebuilds its ranges from them, so their IP
// and node port stay taken, and a deleted one's are free again.
func TestServiceAllocationsSurviveARestart(t *testing.T) {
	r := kitetest.StartRestartable(t)
	cfg := r.Server().RESTConfig()
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()
	svcs := client.CoreV1().Services("default")
	kept, err := svcs.Create(ctx, service("kept", nodePort), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gone, err := svcs.Create(ctx, service("gone", nodePort), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := svcs.Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// What a crash between an IPAddress and its Service's write leaves.
	leaked := &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "10.43.0.160", Labels: map[string]string{"ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io"}},
		Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "never-written"}}}
	if _, err := client.NetworkingV1().IPAddresses().Create(ctx, leaked, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Stop()
	r.Start()
	client = kubernetes.NewForConfigOrDie(r.Server().RESTConfig())
	svcs = client.CoreV1().Services("default")
	same := func(name string, from *v1.Service) *v1.Service {
		return service(name, func(s *v1.ServiceSpec) {
			nodePort(s)
			s.ClusterIP, s.Ports[0].NodePort = from.Spec.ClusterIP, from.Spec.Ports[0].NodePort
		})
	}
	_, err = svcs.Create(ctx, same("copy", kept), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "provided IP is already allocated") {
		t.Errorf("a service asking for the kept one's IP: %v, want it refused", err)
	}
	_, err = svcs.Create(ctx, service("copy-port", func(s *v1.ServiceSpec) { nodePort(s); s.Ports[0].NodePort = kept.Spec.Ports[0].NodePort }), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "provided port is already allocated") {
		t.Errorf("a service asking for the kept one's node port: %v, want it refused", err)
	}
	if _, err := svcs.Create(ctx, same("again", gone), metav1.CreateOptions{}); err != nil {
		t.Errorf("the deleted service's IP and node port are not free after the restart: %v", err)
	}
	if _, err := client.NetworkingV1().IPAddresses().Get(ctx, kept.Spec.ClusterIP, metav1.GetOptions{}); err != nil {
		t.Errorf("the kept service's IPAddress: %v", err)
	}
	if _, err := svcs.Create(ctx, service("after-crash", clusterIP(leaked.Name)), metav1.CreateOptions{}); err != nil {
		t.Errorf("the leaked IPAddress's address is not free after the restart: %v", err)
	}
}

// TestServiceCIDRsAndIPAddressesShowTheAllocations checks the
// networking.k8s.io objects of 1.33's allocator: the default ServiceCIDR,
// an IPAddress per cluster IP naming its Service (kubectl get
// ipaddresses), gone with the Service, and an address held by an
// IPAddress of another's refused to a Service that asks for it.
func TestServiceCIDRsAndIPAddressesShowTheAllocations(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := newNamespace(t, client)
	ctx := t.Context()
	cidr, err := client.NetworkingV1().ServiceCIDRs().Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cidr.Spec.CIDRs) != 1 || cidr.Spec.CIDRs[0] != "10.43.0.0/16" || len(cidr.Status.Conditions) != 1 || cidr.Status.Conditions[0].Status != metav1.ConditionTrue {
		t.Errorf("default ServiceCIDR %v %v, want [10.43.0.0/16] Ready", cidr.Spec.CIDRs, cidr.Status.Conditions)
	}
	if out := kubectl(t, "get", "servicecidrs"); !regexp.MustCompile(`(?m)^kubernetes\s+10\.43\.0\.0/16\s`).MatchString(out) {
		t.Errorf("kubectl get servicecidrs:\n%s", out)
	}
	svc, err := client.CoreV1().Services(ns).Create(ctx, service("web", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip, err := client.NetworkingV1().IPAddresses().Get(ctx, svc.Spec.ClusterIP, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the IPAddress of %s: %v", svc.Spec.ClusterIP, err)
	}
	if ref := ip.Spec.ParentRef; ref == nil || ref.Resource != "services" || ref.Namespace != ns || ref.Name != "web" || ip.Labels["ipaddress.kubernetes.io/managed-by"] != "ipallocator.k8s.io" {
		t.Errorf("IPAddress %s: parent %+v, labels %v", ip.Name, ip.Spec.ParentRef, ip.Labels)
	}
	want := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(svc.Spec.ClusterIP) + `\s+services/` + ns + `/web\s*$`)
	if out := kubectl(t, "get", "ipaddresses"); !want.MatchString(out) {
		t.Errorf("kubectl get ipaddresses:\n%s\nwant a row %s services/%s/web", out, svc.Spec.ClusterIP, ns)
	}
	if err := client.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.NetworkingV1().IPAddresses().Get(ctx, svc.Spec.ClusterIP, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the IPAddress of a deleted service: %v, want NotFound", err)
	}

	// An address someone else holds through an IPAddress of theirs.
	other := &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "10.43.0.150"},
		Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Group: "example.com", Resource: "gateways", Namespace: ns, Name: "gw"}}}
	if _, err := client.NetworkingV1().IPAddresses().Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.NetworkingV1().IPAddresses().Delete(context.Background(), other.Name, metav1.DeleteOptions{})
	})
	_, err = client.CoreV1().Services(ns).Create(ctx, service("taken", clusterIP("10.43.0.150")), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "failed to allocate IP 10.43.0.150: provided IP is already allocated") {
		t.Errorf("a service asking for another's IPAddress: %v", err)
	}

	for _, bad := range []struct {
		obj  *networkingv1.IPAddress
		want string
	}{
		{&networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "10.043.0.1"}, Spec: other.Spec}, "metadata.name"},
		{&networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "10.43.0.151"}}, "spec.parentRef: Required value"},
	} {
		if _, err := client.NetworkingV1().IPAddresses().Create(ctx, bad.obj, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("IPAddress %s: %v, want Invalid about %s", bad.obj.Name, err, bad.want)
		}
	}
	_, err = client.NetworkingV1().ServiceCIDRs().Create(ctx, &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "two-v4"},
		Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.50.0.0/24", "10.51.0.0/24"}}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "may specify no more than one IP for each IP family") {
		t.Errorf("a ServiceCIDR of two IPv4 ranges: %v", err)
	}
}

// TestTheKubernetesServiceIsTheRangesFirstAddress checks upstream's
// `kubernetes` Service in default: the range's first address, 443 to
// the API server's secure port, put back when changed at the next start.
func TestTheKubernetesServiceIsTheRangesFirstAddress(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	svc, err := client.CoreV1().Services("default").Get(t.Context(), "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(shared.URL())
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP != "10.43.0.1" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 || svc.Spec.Ports[0].Name != "https" ||
		svc.Spec.Ports[0].TargetPort.String() != u.Port() || svc.Labels["component"] != "apiserver" || svc.Labels["provider"] != "kubernetes" {
		t.Errorf("kubernetes Service %+v %v, want 10.43.0.1 https 443 -> %s", svc.Spec, svc.Labels, u.Port())
	}
	// The shared server binds 127.0.0.1, so the advertised address is
	// the host's, as kube-apiserver's default --advertise-address: none
	// on a host without a default route.
	if _, err := utilnet.ChooseHostInterface(); err != nil {
		t.Skipf("no host address to advertise: %v", err)
	}
	ep, err := client.CoreV1().Endpoints("default").Get(t.Context(), "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ep.Subsets) != 1 || len(ep.Subsets[0].Addresses) != 1 || len(ep.Subsets[0].Ports) != 1 ||
		strconv.Itoa(int(ep.Subsets[0].Ports[0].Port)) != u.Port() || ep.Labels["endpointslice.kubernetes.io/skip-mirror"] != "true" {
		t.Errorf("kubernetes Endpoints %+v", ep)
	}
	ip := ep.Subsets[0].Addresses[0].IP
	out := kubectl(t, "-n", "default", "get", "svc,ep,endpointslices", "kubernetes")
	for _, row := range []string{
		`service/kubernetes\s+ClusterIP\s+10\.43\.0\.1\s+<none>\s+443/TCP`,
		`endpoints/kubernetes\s+` + regexp.QuoteMeta(ip+":"+u.Port()) + `\s`,
		`endpointslice\.discovery\.k8s\.io/kubernetes\s+IPv[46]\s+` + u.Port() + `\s+` + regexp.QuoteMeta(ip) + `\s`,
	} {
		if !regexp.MustCompile(`(?m)^` + row).MatchString(out) {
			t.Errorf("kubectl get svc,ep,endpointslices kubernetes:\n%s\nwant a row %s", out, row)
		}
	}
}

// TestEndpointsAndEndpointSlicesAreValidatedAsUpstream writes both
// kinds with what upstream refuses.
func TestEndpointsAndEndpointSlicesAreValidatedAsUpstream(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := newNamespace(t, client)
	ctx := t.Context()
	eps := []struct {
		subsets []v1.EndpointSubset
		want    string // "" valid
	}{
		{[]v1.EndpointSubset{{Addresses: []v1.EndpointAddress{{IP: "10.1.2.3"}}, Ports: []v1.EndpointPort{{Port: 80}}}}, ""},
		{[]v1.EndpointSubset{{Ports: []v1.EndpointPort{{Port: 80}}}}, "subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`"},
		{[]v1.EndpointSubset{{Addresses: []v1.EndpointAddress{{IP: "127.0.0.1"}}}}, "may not be in the loopback range (127.0.0.0/8, ::1/128)"},
		{[]v1.EndpointSubset{{Addresses: []v1.EndpointAddress{{IP: "10.1.2.3"}}, Ports: []v1.EndpointPort{{Port: 80}, {Port: 81}}}}, "subsets[0].ports[0].name: Required value"},
	}
	for i, tc := range eps {
		ep := &v1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "ep" + strconv.Itoa(i)}, Subsets: tc.subsets}
		_, err := client.CoreV1().Endpoints(ns).Create(ctx, ep, metav1.CreateOptions{})
		if msg := errText(err); (tc.want == "") != (err == nil) || !strings.Contains(msg, tc.want) {
			t.Errorf("endpoints %d: %v, want %q", i, err, tc.want)
		}
	}
	slices := []struct {
		slice discoveryv1.EndpointSlice
		want  string
	}{
		{discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.1.2.3"}}}, Ports: []discoveryv1.EndpointPort{{Port: ptr.To[int32](80)}}}, ""},
		{discoveryv1.EndpointSlice{AddressType: "IPv5"}, `addressType: Unsupported value: "IPv5"`},
		{discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"fd00::1"}}}}, "must be an IPv4 address"},
		{discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{{}}}, "endpoints[0].addresses: Required value: must contain at least 1 address"},
	}
	for i, tc := range slices {
		tc.slice.Name = "s" + strconv.Itoa(i)
		got, err := client.DiscoveryV1().EndpointSlices(ns).Create(ctx, &tc.slice, metav1.CreateOptions{})
		if msg := errText(err); (tc.want == "") != (err == nil) || !strings.Contains(msg, tc.want) {
			t.Errorf("endpointslice %d: %v, want %q", i, err, tc.want)
		}
		if err == nil && (got.Ports[0].Name == nil || *got.Ports[0].Protocol != v1.ProtocolTCP) {
			t.Errorf("endpointslice %d: port %+v not defaulted", i, got.Ports[0])
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
