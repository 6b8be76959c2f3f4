package builtin

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/registry"
	"github.com/kite-project/kite/registry/servicealloc"
)

// Upstream's defaults: k3s's service range (kube-apiserver has none) and
// kube-apiserver's node port range.
const (
	DefaultServiceClusterIPRange = "10.43.0.0/16"
	DefaultServiceNodePortRange  = "30000-32767"
)

// ServiceAllocation gives Services their cluster IPs, node ports and
// health check node ports, as upstream's service REST storage does
// (pkg/registry/core/service/storage/alloc.go): on create, on update
// (type changes, dual-stack upgrades and downgrades) and back on delete,
// each step a transaction that the write commits or reverts. Its ranges
// live in memory and are rebuilt from the stored Services (Repair)
// before the server serves: an allocation whose Service was never
// written is then free again, so a crash between the two leaks nothing
// and gives nothing twice. Servers that share one etcd do not share
// their ranges (docs/network.md).
//
// Each cluster IP a Service holds is also a networking.k8s.io/v1
// IPAddress object named by the address, as upstream's allocator keeps
// them since 1.33: created before the Service is written (its name in
// etcd is what makes the address taken, whichever server takes it),
// deleted when the Service gives the address back.
type ServiceAllocation struct {
	mu    sync.Mutex
	ips   []*servicealloc.IPRange // the primary range first
	ports *servicealloc.PortRange
	// addresses is the IPAddress store (Install); nil keeps the
	// allocations in memory only.
	addresses *registry.Store
}

// Upstream's marks of the IPAddresses its allocator makes.
const (
	ipAllocatorName = "ipallocator.k8s.io"
	// maxForeignRetries bounds how often one allocation picks again after
	// an address it thought free was held in etcd (by another server).
	maxForeignRetries = 8
)

// NewServiceAllocation makes the ranges of --service-cluster-ip-range
// (one CIDR, or two of different families: dual-stack, the first the
// primary) and --service-node-port-range. Empty values are the defaults.
func NewServiceAllocation(cidrs []string, nodePorts string) (*ServiceAllocation, error) {
	if len(cidrs) == 0 {
		cidrs = []string{DefaultServiceClusterIPRange}
	}
	if nodePorts == "" {
		nodePorts = DefaultServiceNodePortRange
	}
	if len(cidrs) > 2 {
		return nil, fmt.Errorf("service cluster IP ranges %v: at most two, one of each IP family", cidrs)
	}
	a := &ServiceAllocation{}
	for _, c := range cidrs {
		r, err := servicealloc.NewIPRange(c)
		if err != nil {
			return nil, err
		}
		if len(a.ips) == 1 && a.ips[0].Family() == r.Family() {
			return nil, fmt.Errorf("service cluster IP ranges %v: a second range must be of the other IP family", cidrs)
		}
		a.ips = append(a.ips, r)
	}
	var err error
	if a.ports, err = servicealloc.NewPortRange(nodePorts); err != nil {
		return nil, err
	}
	return a, nil
}

// Families are the cluster's service IP families, the primary first.
func (a *ServiceAllocation) Families() []v1.IPFamily {
	out := make([]v1.IPFamily, len(a.ips))
	for i, r := range a.ips {
		out[i] = r.Family()
	}
	return out
}

// CIDRs are the service ranges, the primary first.
func (a *ServiceAllocation) CIDRs() []netip.Prefix {
	out := make([]netip.Prefix, len(a.ips))
	for i, r := range a.ips {
		out[i] = r.CIDR()
	}
	return out
}

// FirstIPs are each range's first address: the `kubernetes` Service's
// cluster IPs.
func (a *ServiceAllocation) FirstIPs() []string {
	out := make([]string, len(a.ips))
	for i, r := range a.ips {
		out[i] = r.First().String()
	}
	return out
}

// NodePortRange is the node port range as upstream prints it.
func (a *ServiceAllocation) NodePortRange() string { return a.ports.String() }

// Install makes strat, the services strategy (Services()), prepare and
// validate for the ranges' families and allocate from them, keeping an
// IPAddress in addresses (nil: none) for each cluster IP. It must run
// before the strategy serves.
func (a *ServiceAllocation) Install(strat *registry.Strategy, addresses *registry.Store) {
	a.addresses = addresses
	setServiceFamilies(strat, a.Families())
	strat.Allocate = func(ctx context.Context, obj, old runtime.Object, dryRun bool) (func(bool), error) {
		var oldSvc *v1.Service
		if old != nil {
			oldSvc = old.(*v1.Service)
		}
		return a.Allocate(ctx, obj.(*v1.Service), oldSvc, dryRun)
	}
	strat.Release = func(ctx context.Context, obj runtime.Object) { a.Release(ctx, obj.(*v1.Service)) }
}

// Repair rebuilds the ranges from the stored Services (upstream's repair
// controllers at start): every cluster IP and node port they hold is
// taken, nothing else. It returns what it found wrong, upstream's
// messages: a cluster IP or node port held twice, or outside the ranges.
func (a *ServiceAllocation) Repair(services []v1.Service) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, r := range a.ips {
		a.ips[i], _ = servicealloc.NewIPRange(r.CIDR().String())
	}
	a.ports, _ = servicealloc.NewPortRange(a.ports.String())
	var problems []string
	for i := range services {
		svc := &services[i]
		for _, ip := range allocatedIPs(svc) {
			r, addr := a.rangeOf(ip)
			switch {
			case r == nil:
				problems = append(problems, fmt.Sprintf("Cluster IP %s is not within any configured Service CIDR; please recreate service %s/%s", ip, svc.Namespace, svc.Name))
			case r.Allocate(addr) != nil:
				problems = append(problems, fmt.Sprintf("Cluster IP %s was assigned to multiple services; please recreate service %s/%s", ip, svc.Namespace, svc.Name))
			}
		}
		for _, port := range allocatedPorts(svc) {
			var notInRange *servicealloc.ErrPortNotInRange
			switch err := a.ports.Allocate(port); {
			case errors.As(err, &notInRange):
				problems = append(problems, fmt.Sprintf("the node port %d for service %s/%s is not within the port range %s; please recreate", port, svc.Namespace, svc.Name, a.ports))
			case err != nil:
				problems = append(problems, fmt.Sprintf("the node port %d for service %s/%s was assigned to multiple services; please recreate", port, svc.Namespace, svc.Name))
			}
		}
	}
	return problems
}

// RepairFrom lists the Services of store and repairs from them, logging
// what it found wrong; then it brings the IPAddress objects in line
// (Install first): one made for each cluster IP that has none, ours that
// no Service holds deleted (a crash between an IPAddress and its Service
// leaves one), others' in a range kept taken. It runs before the server
// serves, so that no allocation is under way.
func (a *ServiceAllocation) RepairFrom(ctx context.Context, store *registry.Store) error {
	obj, err := store.List(ctx, "", &metainternalversion.ListOptions{})
	if err != nil {
		return fmt.Errorf("list services to repair their allocations: %w", err)
	}
	services := obj.(*v1.ServiceList).Items
	logger := klog.FromContext(ctx)
	for _, p := range a.Repair(services) {
		logger.Info("Service allocation repair", "problem", p)
	}
	if a.addresses == nil {
		return nil
	}
	list, err := a.addresses.List(ctx, "", &metainternalversion.ListOptions{})
	if err != nil {
		return fmt.Errorf("list IP addresses to repair them: %w", err)
	}
	holder := map[string]*v1.Service{}
	for i := range services {
		for _, ip := range allocatedIPs(&services[i]) {
			if _, addr := a.rangeOf(ip); addr.IsValid() {
				holder[addr.String()] = &services[i]
			}
		}
	}
	have := map[string]bool{}
	for _, ip := range list.(*networkingv1.IPAddressList).Items {
		svc, ref := holder[ip.Name], ip.Spec.ParentRef
		held := svc != nil && ref != nil && ref.Group == "" && ref.Resource == "services" && ref.Namespace == svc.Namespace && ref.Name == svc.Name
		switch {
		case held:
			have[ip.Name] = true
		case ip.Labels[networkingv1.LabelManagedBy] == ipAllocatorName && svc == nil:
			logger.Info("Deleting an IPAddress no Service holds", "ip", ip.Name)
			if _, _, err := a.addresses.Delete(ctx, "", ip.Name, &metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete leaked IPAddress %s: %w", ip.Name, err)
			}
		case svc == nil:
			if addr, err := netip.ParseAddr(ip.Name); err == nil {
				a.markTaken(addr) // another's: not ours to hand out
			}
		default:
			logger.Info("Service allocation repair", "problem", fmt.Sprintf("Cluster IP %s of service %s/%s is held by another IPAddress parent", ip.Name, svc.Namespace, svc.Name))
			have[ip.Name] = true
		}
	}
	for ip, svc := range holder {
		if have[ip] {
			continue
		}
		addr := netip.MustParseAddr(ip)
		if _, err := a.addresses.Create(ctx, "", ipAddressOf(addr, svc), &metav1.CreateOptions{FieldManager: ipAllocatorName}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create the IPAddress of service %s/%s's %s: %w", svc.Namespace, svc.Name, ip, err)
		}
	}
	return nil
}

// rangeOf returns the range ip belongs to (nil if none) and ip parsed.
func (a *ServiceAllocation) rangeOf(ip string) (*servicealloc.IPRange, netip.Addr) {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return nil, addr
	}
	for _, r := range a.ips {
		if r.CIDR().Contains(addr) {
			return r, addr
		}
	}
	return nil, addr
}

func (a *ServiceAllocation) rangeOfFamily(f v1.IPFamily) *servicealloc.IPRange {
	for _, r := range a.ips {
		if r.Family() == f {
			return r
		}
	}
	return nil
}

// allocatedIPs are the cluster IPs a stored service holds.
func allocatedIPs(svc *v1.Service) []string {
	if !needsClusterIP(svc) || len(svc.Spec.ClusterIPs) == 0 || svc.Spec.ClusterIPs[0] == v1.ClusterIPNone {
		return nil
	}
	return svc.Spec.ClusterIPs
}

// allocatedPorts are the node ports (each once: TCP and UDP may share
// one) and the health check node port a stored service holds.
func allocatedPorts(svc *v1.Service) []int {
	out := nodePortsOf(svc)
	if needsHealthCheckNodePort(svc) && svc.Spec.HealthCheckNodePort != 0 && !slices.Contains(out, int(svc.Spec.HealthCheckNodePort)) {
		out = append(out, int(svc.Spec.HealthCheckNodePort))
	}
	return out
}

// txn is one service write's allocation: what it took (given back if the
// write fails) and what it gives back once the write succeeds.
type txn struct {
	a                       *ServiceAllocation
	ctx                     context.Context // for the IPAddress writes, uncancelled
	tookIPs, releaseIPs     []netip.Addr
	tookPorts, releasePorts []int
	// requested are the taken IPs the service asked for; created the
	// IPAddress objects made for tookIPs.
	requested map[netip.Addr]bool
	created   []netip.Addr
}

func (t *txn) takeIP(r *servicealloc.IPRange, addr netip.Addr) error {
	if err := r.Allocate(addr); err != nil {
		return err
	}
	t.tookIPs = append(t.tookIPs, addr)
	t.requested[addr] = true
	return nil
}

func (t *txn) nextIP(r *servicealloc.IPRange) (netip.Addr, error) {
	addr, err := r.AllocateNext()
	if err == nil {
		t.tookIPs = append(t.tookIPs, addr)
	}
	return addr, err
}

func (t *txn) takePort(port int) error {
	if err := t.a.ports.Allocate(port); err != nil {
		return err
	}
	t.tookPorts = append(t.tookPorts, port)
	return nil
}

func (t *txn) nextPort() (int, error) {
	port, err := t.a.ports.AllocateNext()
	if err == nil {
		t.tookPorts = append(t.tookPorts, port)
	}
	return port, err
}

// finish commits (gives back what the old object held and the new one
// does not) or reverts (gives back what was taken). Called with a.mu
// unlocked.
func (t *txn) finish(ok bool) {
	ips, ports, objects := t.tookIPs, t.tookPorts, t.created
	if ok {
		ips, ports, objects = t.releaseIPs, t.releasePorts, t.releaseIPs
	}
	t.a.deleteAddresses(t.ctx, objects)
	t.a.release(ips, ports)
}

// release frees ips and ports in memory.
func (a *ServiceAllocation) release(ips []netip.Addr, ports []int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ip := range ips {
		if r, _ := a.rangeOf(ip.String()); r != nil {
			r.Release(ip)
		}
	}
	for _, p := range ports {
		a.ports.Release(p)
	}
}

// persist makes the IPAddress objects of the IPs t took for svc. An
// address that exists already (another server's, or one a crash left)
// is returned with ErrIPAllocated.
func (t *txn) persist(svc *v1.Service) (netip.Addr, error) {
	if t.a.addresses == nil {
		return netip.Addr{}, nil
	}
	for _, ip := range t.tookIPs {
		_, err := t.a.addresses.Create(t.ctx, "", ipAddressOf(ip, svc), &metav1.CreateOptions{FieldManager: ipAllocatorName})
		switch {
		case apierrors.IsAlreadyExists(err):
			return ip, servicealloc.ErrIPAllocated
		case err != nil:
			return ip, apierrors.NewInternalError(fmt.Errorf("failed to allocate IP %s for Service %q: %w", ip, svc.Name, err))
		}
		t.created = append(t.created, ip)
	}
	return netip.Addr{}, nil
}

// ipAddressOf is the IPAddress that says svc holds ip, as upstream's
// allocator makes it.
func ipAddressOf(ip netip.Addr, svc *v1.Service) *networkingv1.IPAddress {
	family := v1.IPv4Protocol
	if ip.Is6() {
		family = v1.IPv6Protocol
	}
	return &networkingv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{Name: ip.String(), Labels: map[string]string{
			networkingv1.LabelIPAddressFamily: string(family),
			networkingv1.LabelManagedBy:       ipAllocatorName,
		}},
		Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: svc.Namespace, Name: svc.Name}},
	}
}

// deleteAddresses deletes the IPAddress objects of ips; one already gone
// is no error, others are logged (the next repair finds them).
func (a *ServiceAllocation) deleteAddresses(ctx context.Context, ips []netip.Addr) {
	if a.addresses == nil {
		return
	}
	for _, ip := range ips {
		if _, _, err := a.addresses.Delete(ctx, "", ip.String(), &metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			klog.FromContext(ctx).Error(err, "Deleting a released cluster IP's IPAddress", "ip", ip)
		}
	}
}

// Allocate takes what svc needs (old nil: a create), filling svc's
// cluster IPs and node ports, and returns what settles it: true once svc
// is written, false if it is not. A dry run takes nothing: it checks and
// gives back at once.
func (a *ServiceAllocation) Allocate(ctx context.Context, svc, old *v1.Service, dryRun bool) (func(bool), error) {
	spec := svc.Spec.DeepCopy()
	for attempt := 1; ; attempt++ {
		t := &txn{a: a, ctx: context.WithoutCancel(ctx), requested: map[netip.Addr]bool{}}
		a.mu.Lock()
		var err error
		if old == nil {
			err = a.allocateCreate(t, svc)
		} else {
			err = a.allocateUpdate(t, svc, old)
		}
		a.mu.Unlock()
		if err != nil || dryRun {
			t.finish(false)
			if err != nil {
				return nil, err
			}
			return func(bool) {}, nil
		}
		held, err := t.persist(svc)
		if err == nil {
			return t.finish, nil
		}
		t.finish(false)
		if !errors.Is(err, servicealloc.ErrIPAllocated) {
			return nil, err
		}
		// Held in etcd though free here: keep it taken, and pick again
		// unless the service asked for it.
		a.markTaken(held)
		if t.requested[held] {
			return nil, invalidService(svc, field.Invalid(field.NewPath("spec", "clusterIPs"), svc.Spec.ClusterIPs, fmt.Sprintf("failed to allocate IP %v: %v", held, err)))
		}
		if attempt == maxForeignRetries {
			return nil, apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP for Service %q: %w", svc.Name, err))
		}
		svc.Spec = *spec.DeepCopy()
	}
}

// markTaken takes ip in memory, if it is in a range.
func (a *ServiceAllocation) markTaken(ip netip.Addr) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r, _ := a.rangeOf(ip.String()); r != nil {
		_ = r.Allocate(ip) // already taken is as good
	}
}

// Release gives back what a deleted service held.
func (a *ServiceAllocation) Release(ctx context.Context, svc *v1.Service) {
	ips := parseIPs(allocatedIPs(svc))
	a.deleteAddresses(ctx, ips)
	a.release(ips, allocatedPorts(svc))
	klog.FromContext(ctx).V(4).Info("Released service allocations", "service", klog.KObj(svc))
}

func (a *ServiceAllocation) allocateCreate(t *txn, svc *v1.Service) error {
	if err := a.allocClusterIPs(t, svc, 0); err != nil {
		return err
	}
	if svc.Spec.Type == v1.ServiceTypeNodePort || svc.Spec.Type == v1.ServiceTypeLoadBalancer {
		if err := a.initNodePorts(t, svc); err != nil {
			return err
		}
	}
	if needsHealthCheckNodePort(svc) {
		if err := a.allocHealthCheckNodePort(t, svc); err != nil {
			return apierrors.NewInternalError(err)
		}
	}
	return nil
}

// allocClusterIPs is upstream's allocClusterIPs for the families from
// index from on (0: all; 1: a dual-stack upgrade): a given IP is taken
// or refused, a missing one chosen.
func (a *ServiceAllocation) allocClusterIPs(t *txn, svc *v1.Service, from int) error {
	if !needsClusterIP(svc) || (len(svc.Spec.ClusterIPs) > 0 && svc.Spec.ClusterIPs[0] == v1.ClusterIPNone) {
		return nil
	}
	for i := from; i < len(svc.Spec.IPFamilies); i++ {
		if i >= len(svc.Spec.ClusterIPs) {
			svc.Spec.ClusterIPs = append(svc.Spec.ClusterIPs, "")
		}
		r := a.rangeOfFamily(svc.Spec.IPFamilies[i])
		if r == nil {
			// validateConfiguredFamilies refused it already.
			return apierrors.NewInternalError(fmt.Errorf("service %s: no range of family %s", svc.Name, svc.Spec.IPFamilies[i]))
		}
		ip := svc.Spec.ClusterIPs[i]
		if ip == "" {
			addr, err := t.nextIP(r)
			if err != nil {
				return apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP for Service %q: %w", svc.Name, err))
			}
			svc.Spec.ClusterIPs[i] = addr.String()
		} else {
			addr, err := netip.ParseAddr(ip)
			if err != nil {
				return apierrors.NewInternalError(fmt.Errorf("failed to parse service IP %q", ip))
			}
			if err := t.takeIP(r, addr); err != nil {
				return invalidService(svc, field.Invalid(field.NewPath("spec", "clusterIPs"), svc.Spec.ClusterIPs, fmt.Sprintf("failed to allocate IP %v: %v", ip, err)))
			}
		}
	}
	svc.Spec.ClusterIP = svc.Spec.ClusterIPs[0]
	return nil
}

// initNodePorts is upstream's: a port asked for (by any service port of
// the same port number) is taken or refused, a missing one chosen unless
// the LoadBalancer asks for none; service ports of one port number share
// a node port.
func (a *ServiceAllocation) initNodePorts(t *txn, svc *v1.Service) error {
	byPort := map[int32]int32{}
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		if sp.NodePort == 0 && !needsNodePort(svc) {
			continue // don't allocate, but respect requests
		}
		have := byPort[sp.Port]
		switch {
		case have == 0:
			np := requestedNodePort(sp.Port, svc.Spec.Ports)
			if np != 0 {
				if err := t.takePort(int(np)); err != nil {
					return invalidService(svc, field.Invalid(field.NewPath("spec", "ports").Index(i).Child("nodePort"), np, err.Error()))
				}
			} else {
				n, err := t.nextPort()
				if err != nil {
					return apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: %w", err))
				}
				np = int32(n)
			}
			sp.NodePort = np
			byPort[sp.Port] = np
		case sp.NodePort == 0:
			sp.NodePort = have
		case sp.NodePort != have:
			if err := t.takePort(int(sp.NodePort)); err != nil {
				return invalidService(svc, field.Invalid(field.NewPath("spec", "ports").Index(i).Child("nodePort"), sp.NodePort, err.Error()))
			}
		}
	}
	return nil
}

// requestedNodePort is the node port a service port of port number port
// asks for, 0 if none does.
func requestedNodePort(port int32, ports []v1.ServicePort) int32 {
	for _, p := range ports {
		if p.Port == port && p.NodePort != 0 {
			return p.NodePort
		}
	}
	return 0
}

func (a *ServiceAllocation) allocHealthCheckNodePort(t *txn, svc *v1.Service) error {
	if hc := svc.Spec.HealthCheckNodePort; hc != 0 {
		if err := t.takePort(int(hc)); err != nil {
			return fmt.Errorf("failed to allocate requested HealthCheck NodePort %v: %v", hc, err)
		}
		return nil
	}
	n, err := t.nextPort()
	if err != nil {
		return fmt.Errorf("failed to allocate a HealthCheck NodePort %v: %v", n, err)
	}
	svc.Spec.HealthCheckNodePort = int32(n)
	return nil
}

func (a *ServiceAllocation) allocateUpdate(t *txn, svc, old *v1.Service) error {
	if err := a.updateClusterIPs(t, svc, old); err != nil {
		return err
	}
	oldNodePorts := old.Spec.Type == v1.ServiceTypeNodePort || old.Spec.Type == v1.ServiceTypeLoadBalancer
	newNodePorts := svc.Spec.Type == v1.ServiceTypeNodePort || svc.Spec.Type == v1.ServiceTypeLoadBalancer
	if oldNodePorts && !newNodePorts {
		t.releasePorts = append(t.releasePorts, nodePortsOf(old)...)
	}
	if newNodePorts {
		if err := a.updateNodePorts(t, svc, old); err != nil {
			return err
		}
	}
	switch had, needs := needsHealthCheckNodePort(old), needsHealthCheckNodePort(svc); {
	case !had && needs:
		if err := a.allocHealthCheckNodePort(t, svc); err != nil {
			return apierrors.NewInternalError(err)
		}
	case had && !needs && old.Spec.HealthCheckNodePort != 0:
		t.releasePorts = append(t.releasePorts, int(old.Spec.HealthCheckNodePort))
	}
	return nil
}

// updateClusterIPs is upstream's cases: ExternalName to another type
// allocates, to ExternalName releases, a dual-stack upgrade allocates the
// secondary IP and a downgrade releases it.
func (a *ServiceAllocation) updateClusterIPs(t *txn, svc, old *v1.Service) error {
	if matchingPreferDualStack(svc, old) {
		return nil
	}
	switch {
	case !needsClusterIP(old) && needsClusterIP(svc):
		return a.allocClusterIPs(t, svc, 0)
	case len(old.Spec.ClusterIPs) > 0 && old.Spec.ClusterIPs[0] == v1.ClusterIPNone:
		return nil
	case needsClusterIP(old) && !needsClusterIP(svc):
		t.releaseIPs = append(t.releaseIPs, parseIPs(allocatedIPs(old))...)
	case len(old.Spec.IPFamilies) == 1 && len(svc.Spec.IPFamilies) == 2:
		return a.allocClusterIPs(t, svc, 1)
	case len(old.Spec.IPFamilies) == 2 && len(svc.Spec.IPFamilies) == 1 && len(old.Spec.ClusterIPs) == 2:
		t.releaseIPs = append(t.releaseIPs, parseIPs(old.Spec.ClusterIPs[1:])...)
	}
	return nil
}

// updateNodePorts is upstream's: ports the old object did not hold are
// taken (or refused), missing ones chosen, and those it no longer holds
// given back once the write succeeds.
func (a *ServiceAllocation) updateNodePorts(t *txn, svc, old *v1.Service) error {
	oldPorts := nodePortsOf(old)
	taken := map[int32]bool{}
	type protoPort struct {
		proto v1.Protocol
		port  int32
	}
	seen := map[protoPort]bool{}
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		if sp.NodePort == 0 && !needsNodePort(svc) {
			continue
		}
		if sp.NodePort != 0 {
			if !slices.Contains(oldPorts, int(sp.NodePort)) && !taken[sp.NodePort] {
				if err := t.takePort(int(sp.NodePort)); err != nil {
					return invalidService(svc, field.Invalid(field.NewPath("spec", "ports").Index(i).Child("nodePort"), sp.NodePort, err.Error()))
				}
				taken[sp.NodePort] = true
			}
		} else {
			n, err := t.nextPort()
			if err != nil {
				return apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: %w", err))
			}
			sp.NodePort = int32(n)
		}
		k := protoPort{sp.Protocol, sp.NodePort}
		if seen[k] {
			return fmt.Errorf("duplicate nodePort: {%s %d}", sp.Protocol, sp.NodePort)
		}
		seen[k] = true
	}
	now := nodePortsOf(svc)
	for _, p := range oldPorts {
		if !slices.Contains(now, p) {
			t.releasePorts = append(t.releasePorts, p)
		}
	}
	return nil
}

// nodePortsOf are the service's node ports, each once.
func nodePortsOf(svc *v1.Service) []int {
	var out []int
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 && !slices.Contains(out, int(p.NodePort)) {
			out = append(out, int(p.NodePort))
		}
	}
	return out
}

func parseIPs(ips []string) []netip.Addr {
	var out []netip.Addr
	for _, ip := range ips {
		if addr, err := netip.ParseAddr(ip); err == nil {
			out = append(out, addr)
		}
	}
	return out
}

func invalidService(svc *v1.Service, errs ...*field.Error) error {
	return apierrors.NewInvalid(v1.SchemeGroupVersion.WithKind("Service").GroupKind(), svc.Name, errs)
}
