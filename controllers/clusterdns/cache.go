package clusterdns

import (
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// The cache's bounds, CoreDNS's cache plugin defaults: 9984 entries
// (its 10 000 rounded to its shards), a success kept at most an hour and
// a denial (NXDOMAIN, NODATA) half an hour, whatever longer TTL the
// upstream gave.
const (
	DefaultCacheSize = 9984
	maxSuccessTTL    = time.Hour
	maxDenialTTL     = 30 * time.Minute
)

// What a cached answer is, CoreDNS's cache "type" label.
const (
	cacheSuccess = "success"
	cacheDenial  = "denial"
)

// cacheTTL is how long resp, an upstream's answer, may be kept, and
// whether it is a denial: a success for the least TTL of its records
// (the OPT pseudo-record aside), a denial for its SOA's TTL or minimum,
// whichever is less (RFC 2308), each within its bound. Nothing is kept
// of a truncated answer, of an error other than NXDOMAIN, of a denial
// without an SOA, nor of an answer with a zero TTL.
func cacheTTL(resp *dns.Msg) (ttl time.Duration, kind string, ok bool) {
	if resp.Truncated {
		return 0, "", false
	}
	switch {
	case resp.Rcode == dns.RcodeSuccess && len(resp.Answer) > 0:
		least := uint32(0)
		first := true
		for _, sec := range [][]dns.RR{resp.Answer, resp.Ns, resp.Extra} {
			for _, rr := range sec {
				if rr.Header().Rrtype == dns.TypeOPT {
					continue
				}
				if first || rr.Header().Ttl < least {
					least, first = rr.Header().Ttl, false
				}
			}
		}
		ttl, kind = min(time.Duration(least)*time.Second, maxSuccessTTL), cacheSuccess
	case resp.Rcode == dns.RcodeNameError || resp.Rcode == dns.RcodeSuccess:
		var soa *dns.SOA
		for _, rr := range resp.Ns {
			if s, isSOA := rr.(*dns.SOA); isSOA {
				soa = s
			}
		}
		if soa == nil {
			return 0, "", false
		}
		ttl, kind = min(time.Duration(min(soa.Hdr.Ttl, soa.Minttl))*time.Second, maxDenialTTL), cacheDenial
	default:
		return 0, "", false
	}
	if ttl <= 0 {
		return 0, "", false
	}
	return ttl, kind, true
}

// cacheKey is what makes two queries the same question: the name without
// case, type, class, and whether the client wants DNSSEC records (DO)
// or checking disabled (CD), which change the upstream's answer.
type cacheKey struct {
	name          string
	qtype, qclass uint16
	do, cd        bool
}

func keyOf(r *dns.Msg) cacheKey {
	q := r.Question[0]
	k := cacheKey{name: strings.ToLower(q.Name), qtype: q.Qtype, qclass: q.Qclass, cd: r.CheckingDisabled}
	if opt := r.IsEdns0(); opt != nil {
		k.do = opt.Do()
	}
	return k
}

type cacheEntry struct {
	msg             *dns.Msg
	stored, expires time.Time
	kind            string
}

// answerCache keeps upstreams' answers (the cluster's own names are
// answered from the index, which is as fast and always current). It is
// bounded: a full cache drops an expired entry or, failing that, any
// one (CoreDNS's too drops at random).
type answerCache struct {
	mu      sync.Mutex
	size    int
	entries map[cacheKey]*cacheEntry
	// counts of entries per kind, for the metrics.
	counts map[string]int
	now    func() time.Time
}

func newAnswerCache(size int) *answerCache {
	return &answerCache{size: size, entries: map[cacheKey]*cacheEntry{}, counts: map[string]int{}, now: time.Now}
}

// get is a copy of the answer kept for r's question, with r's ID and
// question (its case) and the TTLs lessened by the time it was kept, and
// its kind; nil when there is none or it expired.
func (c *answerCache) get(r *dns.Msg) (*dns.Msg, string) {
	if c == nil {
		return nil, ""
	}
	k := keyOf(r)
	now := c.now()
	c.mu.Lock()
	e, ok := c.entries[k]
	if ok && !now.Before(e.expires) {
		c.remove(k, e)
		ok = false
	}
	c.mu.Unlock()
	if !ok {
		return nil, ""
	}
	m := e.msg.Copy()
	m.Id, m.Question = r.Id, r.Question
	age := uint32(now.Sub(e.stored) / time.Second)
	for _, sec := range [][]dns.RR{m.Answer, m.Ns, m.Extra} {
		for _, rr := range sec {
			if h := rr.Header(); h.Rrtype != dns.TypeOPT {
				h.Ttl -= min(age, h.Ttl)
			}
		}
	}
	return m, e.kind
}

// put keeps resp, the answer to r, if it may be kept.
func (c *answerCache) put(r, resp *dns.Msg) {
	if c == nil {
		return
	}
	ttl, kind, ok := cacheTTL(resp)
	if !ok {
		return
	}
	k := keyOf(r)
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, had := c.entries[k]; had {
		c.remove(k, old)
	}
	for len(c.entries) >= c.size {
		var victim cacheKey
		found := false
		for vk, ve := range c.entries {
			victim, found = vk, true
			if !now.Before(ve.expires) {
				break
			}
		}
		if !found {
			break
		}
		c.remove(victim, c.entries[victim])
	}
	if c.size <= 0 {
		return
	}
	c.entries[k] = &cacheEntry{msg: resp.Copy(), stored: now, expires: now.Add(ttl), kind: kind}
	c.counts[kind]++
}

func (c *answerCache) remove(k cacheKey, e *cacheEntry) {
	delete(c.entries, k)
	c.counts[e.kind]--
}

// count is the number of entries of kind.
func (c *answerCache) count(kind string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[kind]
}
