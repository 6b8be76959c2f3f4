package builtin

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
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
type ServiceAllocation struct {
	mu    sync.Mutex
	ips   []*servicealloc.IPRange // the primary range first
	ports *servicealloc.PortRange
}

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
// validate for the ranges' families and allocate from them. It must run
// before the strategy serves.
func (a *ServiceAllocation) Install(strat *registry.Strategy) {
	setServiceFamilies(strat, a.Families())
	strat.Allocate = func(_ context.Context, obj, old runtime.Object, dryRun bool) (func(bool), error) {
		var oldSvc *v1.Service
		if old != nil {
			oldSvc = old.(*v1.Service)
		}
		return a.Allocate(obj.(*v1.Service), oldSvc, dryRun)
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
// what it found wrong.
func (a *ServiceAllocation) RepairFrom(ctx context.Context, store *registry.Store) error {
	obj, err := store.List(ctx, "", &metainternalversion.ListOptions{})
	if err != nil {
		return fmt.Errorf("list services to repair their allocations: %w", err)
	}
	for _, p := range a.Repair(obj.(*v1.ServiceList).Items) {
		klog.FromContext(ctx).Info("Service allocation repair", "problem", p)
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
	tookIPs, releaseIPs     []netip.Addr
	tookPorts, releasePorts []int
}

func (t *txn) takeIP(r *servicealloc.IPRange, addr netip.Addr) error {
	if err := r.Allocate(addr); err != nil {
		return err
	}
	t.tookIPs = append(t.tookIPs, addr)
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
	t.a.mu.Lock()
	defer t.a.mu.Unlock()
	ips, ports := t.tookIPs, t.tookPorts
	if ok {
		ips, ports = t.releaseIPs, t.releasePorts
	}
	for _, ip := range ips {
		if r, _ := t.a.rangeOf(ip.String()); r != nil {
			r.Release(ip)
		}
	}
	for _, p := range ports {
		t.a.ports.Release(p)
	}
}

// Allocate takes what svc needs (old nil: a create), filling svc's
// cluster IPs and node ports, and returns what settles it: true once svc
// is written, false if it is not. A dry run takes nothing: it checks and
// gives back at once.
func (a *ServiceAllocation) Allocate(svc, old *v1.Service, dryRun bool) (func(bool), error) {
	a.mu.Lock()
	t := &txn{a: a}
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
	return t.finish, nil
}

// Release gives back what a deleted service held.
func (a *ServiceAllocation) Release(ctx context.Context, svc *v1.Service) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ip := range allocatedIPs(svc) {
		if r, addr := a.rangeOf(ip); r != nil {
			r.Release(addr)
		}
	}
	for _, p := range allocatedPorts(svc) {
		a.ports.Release(p)
	}
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
