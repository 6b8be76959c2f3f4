package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/registry/builtin"
)

// serviceNetFlags are kube-apiserver's flags of Services' ranges.
type serviceNetFlags struct {
	clusterIPRange string
	nodePortRange  string
}

func (f *serviceNetFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.clusterIPRange, "service-cluster-ip-range", builtin.DefaultServiceClusterIPRange, "CIDR Services take their cluster IPs from, or two of different IP families separated by ',' for dual-stack (the first is the primary); its first address is the kubernetes Service's")
	fs.StringVar(&f.nodePortRange, "service-node-port-range", builtin.DefaultServiceNodePortRange, "range of ports NodePort and LoadBalancer Services take their node ports from, 'low-high' inclusive or 'base+size'")
}

// apply checks the flags and puts them in opts.
func (f *serviceNetFlags) apply(opts *kite.Options) error {
	cidrs := strings.Split(f.clusterIPRange, ",")
	for i := range cidrs {
		cidrs[i] = strings.TrimSpace(cidrs[i])
	}
	if _, err := builtin.NewServiceAllocation(cidrs, f.nodePortRange); err != nil {
		return fmt.Errorf("--service-cluster-ip-range, --service-node-port-range: %w", err)
	}
	opts.ServiceClusterIPRanges, opts.ServiceNodePortRange = cidrs, f.nodePortRange
	return nil
}
