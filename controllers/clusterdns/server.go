package clusterdns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/miekg/dns"
	"k8s.io/klog/v2"
)

// forwardTimeout bounds one exchange with one upstream.
const forwardTimeout = 2 * time.Second

// maxChase bounds how many CNAMEs of ExternalName Services an answer
// follows inside the zone.
const maxChase = 8

// handler answers queries: from the index, or from the upstreams.
type handler struct {
	index     *Index
	upstreams []string // host:port; none: REFUSED
	// ownAddrs are the server's addresses, never forwarded to (a host
	// whose resolv.conf names the cluster DNS would loop).
	ownAddrs map[string]bool
	// logger of the server's context: miekg/dns gives handlers none.
	logger klog.Logger
	// cache keeps the upstreams' answers; nil keeps none.
	cache *answerCache
	// metrics count requests, answers, the cache and the upstreams.
	metrics *metrics
}

func (h *handler) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	start := time.Now()
	network := w.RemoteAddr().Network()
	resp, plugin := h.answer(r, network)
	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		size := dns.MinMsgSize
		if opt := r.IsEdns0(); opt != nil {
			size = max(int(opt.UDPSize()), dns.MinMsgSize)
		}
		resp.Truncate(size)
	}
	if err := w.WriteMsg(resp); err != nil {
		h.logger.V(4).Info("Writing a DNS response", "client", w.RemoteAddr().String(), "err", err)
	}
	h.metrics.observe(r, resp, network, w.RemoteAddr(), plugin, time.Since(start))
}

// answer is the response to r, and the part that made it (CoreDNS's
// plugin names: "kubernetes" for the cluster's names, "cache" or
// "forward" for others, "" for a refusal).
func (h *handler) answer(r *dns.Msg, network string) (*dns.Msg, string) {
	resp := new(dns.Msg)
	if r.Opcode != dns.OpcodeQuery || len(r.Question) != 1 {
		return resp.SetRcode(r, dns.RcodeNotImplemented), ""
	}
	resp.SetReply(r)
	resp.Authoritative = true
	resp.RecursionAvailable = true
	if opt := r.IsEdns0(); opt != nil {
		resp.SetEdns0(max(opt.UDPSize(), dns.MinMsgSize), false)
	}
	q := r.Question[0]
	a, ours := h.index.Lookup(q)
	if !ours {
		return h.forward(r, network)
	}
	resp.Rcode, resp.Answer, resp.Ns, resp.Extra = a.Rcode, a.Answer, a.Ns, append(a.Extra, resp.Extra...)
	h.chase(resp, q, network)
	return resp, "kubernetes"
}

// chase follows an answer's trailing CNAME (an ExternalName Service) for
// a query of another type, as CoreDNS does: inside the zone from the
// index, outside from the upstreams (a stub resolver does not follow a
// CNAME itself). What the upstreams do not answer leaves the CNAME alone.
func (h *handler) chase(resp *dns.Msg, q dns.Question, network string) {
	if q.Qtype == dns.TypeCNAME || q.Qtype == dns.TypeANY {
		return
	}
	for range maxChase {
		if len(resp.Answer) == 0 {
			return
		}
		cname, ok := resp.Answer[len(resp.Answer)-1].(*dns.CNAME)
		if !ok {
			return
		}
		next := dns.Question{Name: cname.Target, Qtype: q.Qtype, Qclass: q.Qclass}
		if a, ours := h.index.Lookup(next); ours {
			resp.Answer = append(resp.Answer, a.Answer...)
			if a.Rcode != dns.RcodeSuccess || len(a.Answer) == 0 {
				resp.Rcode, resp.Ns = a.Rcode, a.Ns
				return
			}
			continue
		}
		m := new(dns.Msg)
		m.SetQuestion(next.Name, next.Qtype)
		m.RecursionDesired = true
		if up, _ := h.forward(m, network); up.Rcode == dns.RcodeSuccess {
			resp.Answer = append(resp.Answer, up.Answer...)
		}
		return
	}
}

// forward answers from the cache, or asks the upstreams, in order,
// until one answers (and keeps what it may of the answer); without
// upstreams the query is REFUSED, and SERVFAIL when none answers.
func (h *handler) forward(r *dns.Msg, network string) (*dns.Msg, string) {
	fail := func(code int) (*dns.Msg, string) { return new(dns.Msg).SetRcode(r, code), "forward" }
	if len(h.upstreams) == 0 {
		return new(dns.Msg).SetRcode(r, dns.RcodeRefused), ""
	}
	if h.cache != nil {
		// A TCP client may take what a UDP one was given truncated (a
		// truncated answer is never kept), and a UDP client is given
		// what it can take, truncated by ServeDNS.
		m, kind := h.cache.get(r)
		h.metrics.cacheLookup(kind)
		if m != nil {
			return m, "cache"
		}
	}
	// UDP first whatever the client used; TCP when the answer did not
	// fit and the client can take a large one.
	udp := &dns.Client{Net: "udp", Timeout: forwardTimeout}
	tcp := &dns.Client{Net: "tcp", Timeout: forwardTimeout}
	for _, up := range h.upstreams {
		if h.ownAddrs[up] {
			continue
		}
		start := time.Now()
		resp, _, err := udp.Exchange(r, up)
		if err == nil && resp.Truncated && network == "tcp" {
			resp, _, err = tcp.Exchange(r, up)
		}
		if err != nil {
			h.metrics.forwarded(up, "", time.Since(start))
			h.logger.V(4).Info("Forwarding a DNS query", "upstream", up, "name", r.Question[0].Name, "err", err)
			continue
		}
		h.metrics.forwarded(up, rcodeString(resp.Rcode), time.Since(start))
		resp.Id = r.Id
		h.cache.put(r, resp)
		return resp, "forward"
	}
	return fail(dns.RcodeServerFailure)
}

// Server serves the index over UDP and TCP on one address, and its
// metrics over HTTP on another, if any.
type Server struct {
	udp, tcp *dns.Server
	addr     string
	metrics  *MetricsServer
}

// ServerOptions are what a Server answers with, besides its index.
type ServerOptions struct {
	// Upstreams are the resolvers (host:port) other names go to; none:
	// REFUSED.
	Upstreams []string
	// CacheSize bounds the cache of the upstreams' answers (entries);
	// zero is DefaultCacheSize, negative keeps none.
	CacheSize int
	// MetricsAddr is host:port to serve /metrics on (port 0: a free one);
	// "" serves none.
	MetricsAddr string
}

// Listen opens addr (host:port; port 0 takes a free port, the same for
// UDP and TCP), and the metrics address if any, and returns a Server;
// Serve serves it.
func Listen(addr string, idx *Index, opts ServerOptions) (*Server, error) {
	pc, ln, err := listenBoth(addr)
	if err != nil {
		return nil, err
	}
	s := &Server{addr: ln.Addr().String()}
	h := &handler{index: idx, upstreams: opts.Upstreams, ownAddrs: map[string]bool{s.addr: true}}
	switch {
	case opts.CacheSize == 0:
		h.cache = newAnswerCache(DefaultCacheSize)
	case opts.CacheSize > 0:
		h.cache = newAnswerCache(opts.CacheSize)
	}
	h.metrics = newMetrics(s.addr, h.cache)
	if opts.MetricsAddr != "" {
		if s.metrics, err = listenMetrics(opts.MetricsAddr, h.metrics); err != nil {
			pc.Close()
			ln.Close()
			return nil, fmt.Errorf("cluster DNS metrics: %w", err)
		}
	}
	s.udp = &dns.Server{PacketConn: pc, Handler: h}
	s.tcp = &dns.Server{Listener: ln, Handler: h, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second}
	return s, nil
}

// MetricsAddr is the address /metrics is served on, "" for none.
func (s *Server) MetricsAddr() string {
	if s.metrics == nil {
		return ""
	}
	return s.metrics.Addr()
}

// listenBoth opens UDP and TCP on one port.
func listenBoth(addr string) (net.PacketConn, net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster DNS address %q: %w", addr, err)
	}
	var lastErr error
	// With port 0 the UDP port the TCP listener got may be taken: try
	// again a few times.
	for range 10 {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, nil, fmt.Errorf("cluster DNS: %w", err)
		}
		p := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		pc, err := net.ListenPacket("udp", net.JoinHostPort(host, p))
		if err == nil {
			return pc, ln, nil
		}
		ln.Close()
		lastErr = err
		if port != "0" {
			break
		}
	}
	return nil, nil, fmt.Errorf("cluster DNS: %w", lastErr)
}

// Addr is the address served, host:port.
func (s *Server) Addr() string { return s.addr }

// Serve serves until ctx ends, then shuts the listeners down.
func (s *Server) Serve(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	for _, srv := range []*dns.Server{s.udp, s.tcp} {
		srv.Handler.(*handler).logger = logger
	}
	errc := make(chan error, 2)
	var wg sync.WaitGroup
	mctx, stopMetrics := context.WithCancel(ctx)
	defer stopMetrics()
	if s.metrics != nil {
		wg.Go(func() { s.metrics.serve(mctx) })
	}
	var started []*dns.Server
	var err error
	for _, srv := range []*dns.Server{s.udp, s.tcp} {
		up := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(up) }
		wg.Go(func() { errc <- srv.ActivateAndServe() })
		// A server is shut down only once it has started (miekg/dns
		// refuses to shut down one that has not).
		select {
		case <-up:
			started = append(started, srv)
			continue
		case err = <-errc:
		}
		break
	}
	if err == nil {
		select {
		case <-ctx.Done():
		case err = <-errc:
		}
	}
	for _, srv := range started {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if serr := srv.ShutdownContext(sctx); serr != nil && err == nil && ctx.Err() == nil {
			err = serr
		}
		cancel()
	}
	// Listeners of a server that never started are still open.
	s.udp.PacketConn.Close()
	s.tcp.Listener.Close()
	stopMetrics()
	wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
