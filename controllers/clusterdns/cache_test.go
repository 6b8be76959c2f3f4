package clusterdns

import (
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func rrA(name string, ttl uint32) dns.RR {
	return &dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: ttl}, A: net.ParseIP("192.0.2.1")}
}

func soa(ttl, minttl uint32) dns.RR {
	return &dns.SOA{Hdr: dns.RR_Header{Name: "example.", Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: ttl}, Ns: "ns.example.", Mbox: "h.example.", Minttl: minttl}
}

func reply(rcode int, answer, ns []dns.RR) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion("www.example.", dns.TypeA)
	m.Response, m.Rcode, m.Answer, m.Ns = true, rcode, answer, ns
	return m
}

func TestCacheTTL(t *testing.T) {
	truncated := reply(dns.RcodeSuccess, []dns.RR{rrA("www.example.", 30)}, nil)
	truncated.Truncated = true
	for _, tc := range []struct {
		name string
		resp *dns.Msg
		ttl  time.Duration
		kind string
	}{
		{"a success is kept for its least TTL", reply(dns.RcodeSuccess, []dns.RR{rrA("www.example.", 300), rrA("www.example.", 30)}, []dns.RR{soa(600, 60)}), 30 * time.Second, cacheSuccess},
		{"a success at most an hour", reply(dns.RcodeSuccess, []dns.RR{rrA("www.example.", 86400)}, nil), time.Hour, cacheSuccess},
		{"a zero TTL is not kept", reply(dns.RcodeSuccess, []dns.RR{rrA("www.example.", 0)}, nil), 0, ""},
		{"NXDOMAIN for the SOA's minimum when less than its TTL", reply(dns.RcodeNameError, nil, []dns.RR{soa(600, 60)}), time.Minute, cacheDenial},
		{"NODATA for the SOA's TTL when less than its minimum", reply(dns.RcodeSuccess, nil, []dns.RR{soa(20, 60)}), 20 * time.Second, cacheDenial},
		{"a denial at most half an hour", reply(dns.RcodeNameError, nil, []dns.RR{soa(86400, 86400)}), 30 * time.Minute, cacheDenial},
		{"a denial without an SOA is not kept", reply(dns.RcodeNameError, nil, nil), 0, ""},
		{"SERVFAIL is not kept", reply(dns.RcodeServerFailure, nil, []dns.RR{soa(600, 60)}), 0, ""},
		{"a truncated answer is not kept", truncated, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ttl, kind, ok := cacheTTL(tc.resp)
			if ok != (tc.ttl > 0) || ttl != tc.ttl || kind != tc.kind {
				t.Errorf("cacheTTL = %v, %q, %v; want %v, %q", ttl, kind, ok, tc.ttl, tc.kind)
			}
		})
	}
}

func question(name string, qtype uint16, do bool) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	if do {
		m.SetEdns0(1232, true)
	}
	return m
}

func TestAnswerCache(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newAnswerCache(2)
	c.now = func() time.Time { return now }
	q := question("www.example.", dns.TypeA, false)
	c.put(q, reply(dns.RcodeSuccess, []dns.RR{rrA("www.example.", 30)}, nil))

	t.Run("a later question without case gets the answer, with its ID and TTLs lessened by the time kept", func(t *testing.T) {
		now = now.Add(10 * time.Second)
		r := question("WWW.Example.", dns.TypeA, false)
		m, kind := c.get(r)
		if m == nil || kind != cacheSuccess {
			t.Fatalf("get = %v, %q", m, kind)
		}
		if m.Id != r.Id || m.Question[0].Name != "WWW.Example." || m.Answer[0].Header().Ttl != 20 {
			t.Errorf("answer id %d (want %d), question %s, TTL %d (want 20)", m.Id, r.Id, m.Question[0].Name, m.Answer[0].Header().Ttl)
		}
	})
	t.Run("another type, or DNSSEC asked for, is another question", func(t *testing.T) {
		if m, _ := c.get(question("www.example.", dns.TypeAAAA, false)); m != nil {
			t.Errorf("AAAA answered from the A: %v", m)
		}
		if m, _ := c.get(question("www.example.", dns.TypeA, true)); m != nil {
			t.Errorf("a DO query answered from a plain one: %v", m)
		}
	})
	t.Run("the copy given is not the kept one", func(t *testing.T) {
		m, _ := c.get(q)
		m.Answer[0].Header().Ttl = 9999
		if again, _ := c.get(q); again.Answer[0].Header().Ttl == 9999 {
			t.Error("a change of an answer given changed the cache")
		}
	})
	t.Run("the cache stays within its size", func(t *testing.T) {
		c.put(question("a.example.", dns.TypeA, false), reply(dns.RcodeSuccess, []dns.RR{rrA("a.example.", 30)}, nil))
		c.put(question("b.example.", dns.TypeA, false), reply(dns.RcodeNameError, nil, []dns.RR{soa(60, 60)}))
		if n := len(c.entries); n != 2 {
			t.Errorf("%d entries, want 2", n)
		}
		if s, d := c.count(cacheSuccess), c.count(cacheDenial); s+d != 2 || d != 1 {
			t.Errorf("counts: %d successes, %d denials; want 2 in all, the denial among them", s, d)
		}
	})
	t.Run("an expired answer is gone", func(t *testing.T) {
		now = now.Add(time.Hour)
		if m, _ := c.get(question("b.example.", dns.TypeA, false)); m != nil {
			t.Errorf("expired answer given: %v", m)
		}
		if d := c.count(cacheDenial); d != 0 {
			t.Errorf("%d denials counted after the expiry", d)
		}
	})
}
