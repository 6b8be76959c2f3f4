package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kite-project/kite/controllers"
	"github.com/kite-project/kite/controllers/nodeipam"
)

// nodeIPAMFlags are kube-controller-manager's flags of node pod ranges.
type nodeIPAMFlags struct {
	allocate    bool
	clusterCIDR string
	maskSize    int
}

func (f *nodeIPAMFlags) add(fs *pflag.FlagSet) {
	// Upstream's default is false (a cloud or a CNI plugin may assign
	// ranges); Kite's agents take pod addresses from their node's podCIDR,
	// so it allocates by default, as k3s does.
	fs.BoolVar(&f.allocate, "allocate-node-cidrs", true, "give each Node a podCIDR from --cluster-cidr (the "+controllers.NodeIPAM+"); false leaves nodes' podCIDRs to the administrator")
	fs.StringVar(&f.clusterCIDR, "cluster-cidr", nodeipam.DefaultClusterCIDR, "CIDR range of pods, cut into one block per node; an IPv4 and an IPv6 CIDR separated by ',' for dual-stack")
	fs.IntVar(&f.maskSize, "node-cidr-mask-size", nodeipam.DefaultNodeCIDRMaskSize, "prefix length of each node's IPv4 block of --cluster-cidr (IPv6 blocks are /64)")
}

// options checks the flags and returns the controller names (without the
// node IPAM controller when allocation is off) and its ranges.
func (f *nodeIPAMFlags) options(names []string) ([]string, []string, error) {
	if !f.allocate {
		return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == controllers.NodeIPAM }), nil, nil
	}
	cidrs := strings.Split(f.clusterCIDR, ",")
	for i := range cidrs {
		cidrs[i] = strings.TrimSpace(cidrs[i])
	}
	if _, err := nodeipam.ParseRanges(cidrs, f.maskSize, nodeipam.DefaultNodeCIDRMaskSizeIPv6); err != nil {
		return nil, nil, fmt.Errorf("--cluster-cidr, --node-cidr-mask-size: %w", err)
	}
	return names, cidrs, nil
}
