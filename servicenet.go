package kite

import (
	"context"
	"fmt"

	"github.com/kite-project/kite/registry/builtin"
)

// allocateServices makes the services strategy allocate cluster IPs and
// node ports from opts' ranges, rebuilt from the stored Services before
// anything is served (upstream's repair at start).
func (s *Server) allocateServices(ctx context.Context, opts Options) error {
	alloc, err := builtin.NewServiceAllocation(opts.ServiceClusterIPRanges, opts.ServiceNodePortRange)
	if err != nil {
		return fmt.Errorf("service ranges: %w", err)
	}
	services := s.resources.Store("services")
	if err := alloc.RepairFrom(ctx, services); err != nil {
		return err
	}
	alloc.Install(services.Strategy())
	s.services = alloc
	return nil
}

// ServiceAllocation is what gives Services their cluster IPs and node
// ports: its ranges and the `kubernetes` Service's address.
func (s *Server) ServiceAllocation() *builtin.ServiceAllocation { return s.services }
