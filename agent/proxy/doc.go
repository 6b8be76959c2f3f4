// Package proxy is the node agent's service proxy: what kube-proxy does
// in its nftables mode (k8s.io/kubernetes pkg/proxy/nftables), written
// anew. Traffic to a Service's cluster IP, external IPs, load-balancer
// IPs and node ports is translated (DNAT) to one of its ready endpoints,
// picked at random (numgen random mod N), with upstream's rules for
// terminating endpoints, sessionAffinity ClientIP, internal and
// external traffic policy Local, rejection when there is no endpoint,
// and masquerading (traffic from outside the cluster's pod ranges, node
// ports with the Cluster policy, a pod reaching itself through its
// Service).
//
// The decision is Rules, a pure function of the Services, the
// EndpointSlices and the node (Config) that returns the whole Ruleset;
// Render turns it into one nft(8) script that replaces the tables
// "ip kite-proxy" and "ip6 kite-proxy" in a single transaction. The
// Proxy runner watches Services, EndpointSlices and its Node, and applies
// the Ruleset with `nft -f -` after each change, no more often than its
// minimum sync period (bursts are coalesced), and again every sync period;
// it deletes its tables when it stops. Nothing outside those tables is
// touched. See docs/proxy.md.
package proxy
