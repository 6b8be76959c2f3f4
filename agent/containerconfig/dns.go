package containerconfig

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The limits of a resolver configuration, upstream's validation's
// (MaxDNSNameservers, MaxDNSSearchPaths, MaxDNSSearchListChars) and the
// length of a domain (glibc aborts on a longer search path).
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
	maxDomainLength       = 253
)

// DNSWarning is an event the kubelet records about a pod's resolver
// configuration: reason DNSConfigForming (a limit cut the configuration)
// or MissingClusterDNS (ClusterFirst without a cluster DNS).
type DNSWarning struct{ Reason, Message string }

// PodDNS is the pod's resolver configuration, as the kubelet's GetPodDNS
// (pkg/kubelet/network/dns): by dnsPolicy,
//   - ClusterFirst (hostNetwork false) and ClusterFirstWithHostNet: the
//     cluster DNS (in.ClusterDNS) as the only nameservers, the searches
//     <ns>.svc.<domain>, svc.<domain>, <domain> and then the host's, and
//     options ndots:5; without a cluster DNS, Default (a
//     MissingClusterDNS warning);
//   - Default, and ClusterFirst of a hostNetwork pod: the host's
//     resolv.conf (in.HostDNS);
//   - None: nothing but the pod's dnsConfig;
//
// then the pod's dnsConfig merged in (nameservers and searches appended
// without duplicates, options by name, the pod's winning), cut to 3
// nameservers and 32 searches of at most 2048 characters with a
// DNSConfigForming warning. Without in.HostDNS (the host's could not be
// read) the host's part is empty.
func PodDNS(pod *v1.Pod, in Inputs) (*runtimeapi.DNSConfig, []DNSWarning) {
	var warnings []DNSWarning
	out := &runtimeapi.DNSConfig{}
	if h := in.HostDNS; h != nil {
		out.Servers, out.Searches, out.Options = slices.Clone(h.Servers), slices.Clone(h.Searches), slices.Clone(h.Options)
	}
	switch policy := pod.Spec.DNSPolicy; {
	case policy == v1.DNSNone:
		out = &runtimeapi.DNSConfig{}
	case policy == v1.DNSClusterFirstWithHostNet, policy != v1.DNSDefault && !pod.Spec.HostNetwork:
		// ClusterFirst, and anything unknown, as the kubelet falls back to
		// it for an invalid policy.
		if len(in.ClusterDNS) == 0 {
			warnings = append(warnings, DNSWarning{"MissingClusterDNS", fmt.Sprintf(
				"pod: %q. kubelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy.",
				pod.Name+"_"+pod.Namespace+"("+string(pod.UID)+")", v1.DNSClusterFirst, v1.DNSDefault)})
			break
		}
		out.Servers = slices.Clone(in.ClusterDNS)
		if d := in.ClusterDomain; d != "" {
			out.Searches = appendNew([]string{pod.Namespace + ".svc." + d, "svc." + d, d}, out.Searches)
		}
		out.Options = []string{"ndots:5"}
	}
	if pc := pod.Spec.DNSConfig; pc != nil {
		out.Servers = appendNew(out.Servers, pc.Nameservers)
		out.Searches = appendNew(out.Searches, pc.Searches)
		out.Options = dnsOptions(out.Options, pc.Options)
	}
	if len(out.Servers) > maxDNSNameservers {
		out.Servers = out.Servers[:maxDNSNameservers]
		warnings = append(warnings, DNSWarning{"DNSConfigForming", "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: " + strings.Join(out.Servers, " ")})
	}
	var cut bool
	if out.Searches, cut = searchesWithinLimits(out.Searches); cut {
		warnings = append(warnings, DNSWarning{"DNSConfigForming", "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " + strings.Join(out.Searches, " ")})
	}
	return out, warnings
}

// searchesWithinLimits cuts a search list as the kubelet's
// formDNSSearchFitsLimits: the first 32, without those longer than a
// domain, then from the end until the line is 2048 characters at most.
func searchesWithinLimits(searches []string) ([]string, bool) {
	cut := false
	if len(searches) > maxDNSSearchPaths {
		searches, cut = searches[:maxDNSSearchPaths], true
	}
	kept := searches[:0:0]
	for _, s := range searches {
		if len(s) > maxDomainLength {
			cut = true
			continue
		}
		kept = append(kept, s)
	}
	for len(kept) > 0 && len(strings.Join(kept, " ")) > maxDNSSearchListChars {
		kept, cut = kept[:len(kept)-1], true
	}
	return kept, cut
}

func appendNew(to, from []string) []string {
	for _, s := range from {
		if !slices.Contains(to, s) {
			to = append(to, s)
		}
	}
	return to
}

// dnsOptions merges the pod's options into existing ("name" or
// "name:value"), a pod option replacing one of its name.
func dnsOptions(existing []string, pod []v1.PodDNSConfigOption) []string {
	out := slices.Clone(existing)
	for _, o := range pod {
		s := o.Name
		if o.Value != nil {
			s += ":" + *o.Value
		}
		out = slices.DeleteFunc(out, func(e string) bool { n, _, _ := strings.Cut(e, ":"); return n == o.Name })
		out = append(out, s)
	}
	return out
}
