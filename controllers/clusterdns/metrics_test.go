package clusterdns_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"k8s.io/klog/v2/ktesting"

	"github.com/kite-project/kite/controllers/clusterdns"
)

// countingUpstream is a resolver on 127.0.0.1 that answers A queries of
// any name with upstreamIP for 60 s, NXDOMAIN with an SOA for names under
// "missing.", and counts the queries it gets.
func countingUpstream(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	s := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		n.Add(1)
		m := new(dns.Msg).SetReply(r)
		q := r.Question[0]
		if strings.HasSuffix(q.Name, "missing.") {
			m.Rcode = dns.RcodeNameError
			m.Ns = []dns.RR{&dns.SOA{Hdr: dns.RR_Header{Name: "missing.", Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 60}, Ns: "ns.missing.", Mbox: "h.missing.", Minttl: 60}}
		} else if q.Qtype == dns.TypeA {
			m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.ParseIP(upstreamIP)}}
		}
		w.WriteMsg(m)
	})}
	started := make(chan struct{})
	s.NotifyStartedFunc = func() { close(started) }
	go s.ActivateAndServe()
	<-started
	t.Cleanup(func() { s.Shutdown() })
	return pc.LocalAddr().String(), &n
}

// TestForwardedAnswersAreCachedAndCounted runs a DNS with a cache and
// metrics: a name outside the zone asked twice reaches the upstream once
// (the second answer, with a TTL no greater, comes from the cache), and
// so does a name that does not exist; /metrics then has CoreDNS's series
// with its labels: requests by protocol and type, responses by rcode and
// what answered, cache hits, misses and entries, the upstream's
// exchanges.
func TestForwardedAnswersAreCachedAndCounted(t *testing.T) {
	up, upstreamQueries := countingUpstream(t)
	d, err := clusterdns.New(clusterdns.Options{Client: cs, Addr: "127.0.0.1:0", Upstreams: []string{up}, MetricsAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	ask := func(name string, qtype uint16) *dns.Msg {
		t.Helper()
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		r, _, err := (&dns.Client{Net: "udp", Timeout: 2 * time.Second}).Exchange(m, d.Addr())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for !d.HasSynced() {
		time.Sleep(10 * time.Millisecond)
	}

	first := ask("www.example.org.", dns.TypeA)
	second := ask("WWW.example.org.", dns.TypeA)
	if got := answers(second); got != "NOERROR A "+upstreamIP || answers(first) != got {
		t.Errorf("answers %q then %q, want the upstream's", answers(first), got)
	}
	if ttl := second.Answer[0].Header().Ttl; ttl > 60 {
		t.Errorf("cached TTL %d, want at most the upstream's 60", ttl)
	}
	for range 2 {
		if r := ask("nothing.missing.", dns.TypeA); r.Rcode != dns.RcodeNameError || len(r.Ns) != 1 {
			t.Errorf("nothing.missing.: %v", r)
		}
	}
	if got := upstreamQueries.Load(); got != 2 {
		t.Errorf("the upstream got %d queries, want 2 (one per name; the repeats are the cache's)", got)
	}
	ask("kubernetes.default.svc.cluster.local.", dns.TypeA)

	server := `server="dns://` + d.Addr() + `"`
	// A request is counted once its answer is written, a moment after
	// the client has it: wait for the fifth.
	last := `coredns_dns_request_duration_seconds_count{` + server + `,type="A",view="",zone="."} 5`
	var body string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		resp, err := http.Get("http://" + d.MetricsAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		if strings.Contains(body, last) || time.Now().After(deadline) {
			break
		}
	}
	for _, want := range []string{
		`coredns_dns_requests_total{family="1",proto="udp",` + server + `,type="A",view="",zone="."} 5`,
		`coredns_dns_responses_total{plugin="forward",rcode="NOERROR",` + server + `,view="",zone="."} 1`,
		`coredns_dns_responses_total{plugin="cache",rcode="NOERROR",` + server + `,view="",zone="."} 1`,
		`coredns_dns_responses_total{plugin="cache",rcode="NXDOMAIN",` + server + `,view="",zone="."} 1`,
		`coredns_dns_responses_total{plugin="kubernetes",rcode="NOERROR",` + server + `,view="",zone="."} 1`,
		`coredns_cache_hits_total{` + server + `,type="success",view="",zones="."} 1`,
		`coredns_cache_hits_total{` + server + `,type="denial",view="",zones="."} 1`,
		`coredns_cache_misses_total{` + server + `,view="",zones="."} 2`,
		`coredns_cache_requests_total{` + server + `,view="",zones="."} 4`,
		`coredns_cache_entries{` + server + `,type="success",view="",zones="."} 1`,
		`coredns_cache_entries{` + server + `,type="denial",view="",zones="."} 1`,
		`coredns_proxy_request_duration_seconds_count{proxy_name="forward",rcode="NOERROR",to="` + up + `"} 1`,
		`coredns_dns_request_duration_seconds_count{` + server + `,type="A",view="",zone="."} 5`,
		`coredns_dns_request_size_bytes_count{proto="udp",` + server + `,view="",zone="."} 5`,
		`coredns_dns_response_size_bytes_count{proto="udp",` + server + `,view="",zone="."} 5`,
		`coredns_build_info{goversion="`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", grepLines(body, "coredns_"))
	}
}

func grepLines(s, substr string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, substr) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestKiteServesItsDNSMetrics: a Kite whose DNS has a metrics address
// serves CoreDNS's series there.
func TestKiteServesItsDNSMetrics(t *testing.T) {
	query(t, "udp", "kubernetes.default.svc.cluster.local.", dns.TypeA)
	want := `coredns_dns_requests_total{family="1",proto="udp",server="dns://` + srv.ClusterDNSAddr() + `",type="A",view="",zone="."}`
	// The request is counted once its answer is written, as CoreDNS's
	// metrics plugin counts it: a moment after the client has it.
	var b []byte
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		resp, err := http.Get("http://" + srv.ClusterDNSMetricsAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), want) || time.Now().After(deadline) {
			break
		}
	}
	if !strings.Contains(string(b), want) {
		t.Errorf("Kite's DNS metrics at %s lack %s:\n%s", srv.ClusterDNSMetricsAddr(), want, grepLines(string(b), "coredns_dns_requests"))
	}
}

// BenchmarkQueryForwardedFromCache is an A query of a name outside the
// zone, over UDP on 127.0.0.1, answered from the cache (the first one
// fills it); it reports the 50th and 99th percentiles of the round trip.
func BenchmarkQueryForwardedFromCache(b *testing.B) {
	const name = "cached.example.org."
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	c := &dns.Client{Timeout: 2 * time.Second}
	conn, err := c.Dial(srv.ClusterDNSAddr())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	if _, _, err := c.ExchangeWithConn(m, conn); err != nil {
		b.Fatal(err)
	}
	var took []time.Duration
	for b.Loop() {
		t0 := time.Now()
		r, _, err := c.ExchangeWithConn(m, conn)
		took = append(took, time.Since(t0))
		if err != nil || len(r.Answer) != 1 {
			b.Fatalf("%s: %v %v", name, r, err)
		}
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms-p50")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "ms-p99")
}
