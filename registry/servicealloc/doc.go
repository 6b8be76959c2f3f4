// Package servicealloc holds the ranges Services take their cluster IPs
// and node ports from: upstream's ipallocator and portallocator, less
// their storage. A range is a set of offsets with upstream's split into a
// lower band, which dynamic allocation takes from only once the upper one
// is full, so that addresses and ports chosen by hand (the cluster DNS's
// x.x.0.10) stay free (KEP-3070, KEP-3668). The ranges are in memory:
// the service registry rebuilds them from the stored Services when the
// server starts (see registry/builtin's ServiceAllocation and
// docs/network.md).
//
// A range is not safe for concurrent use; its owner locks.
package servicealloc
