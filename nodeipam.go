package kite

import "github.com/kite-project/kite/controllers/nodeipam"

// nodeIPAMOptions are the node IPAM controller's ranges: opts' cluster
// CIDRs, kept clear of the Services' ranges, as upstream's allocator
// filters out the service CIDR.
func (s *Server) nodeIPAMOptions(opts Options) nodeipam.Options {
	o := nodeipam.Options{ClusterCIDRs: opts.ClusterCIDRs, NodeCIDRMaskSize: opts.NodeCIDRMaskSize}
	if s.services != nil {
		for _, p := range s.services.CIDRs() {
			o.Reserved = append(o.Reserved, p.String())
		}
	}
	return o
}
