// Package http is the agent's "http" pod source (--manifest-url): a URL that
// serves static pods, one Pod or a PodList, in YAML or JSON.
//
// The URL is fetched at the start and then CheckFrequency after each fetch
// ends (--http-check-frequency, default 20 s), each fetch bounded by Timeout
// (10 s). The configured headers (--manifest-url-header) go with every
// request, and so do If-None-Match and If-Modified-Since once the server has
// given an ETag or a Last-Modified with a good body. A body of more than 10
// MiB is refused.
//
// The complete set of pods (a SET) is sent when the body changes and
// decodes. Nothing is sent for a 304 or a body identical to the last good
// one. Errors keep the last good set of pods, never remove it: a status other
// than 2xx or 304, a timeout, a connection error, a body that does not decode
// or validate (one bad pod refuses the whole body), and an empty body (upstream
// removes every pod on an empty 200 response; serve an empty PodList to mean
// "no pods"). Each error is reported (log line naming the URL and the reason,
// and the ProblemReporter) once while it lasts, and its end is logged.
package http

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"net/url"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/agent/staticpod"
)

// Defaults, as upstream.
const (
	DefaultCheckFrequency = 20 * time.Second
	DefaultTimeout        = 10 * time.Second
)

// Options configures an http source.
type Options struct {
	// URL serves the manifests (--manifest-url).
	URL string
	// Header is sent with every request (--manifest-url-header).
	Header nethttp.Header
	// NodeName is the node the agent runs as; static pods are named after it.
	NodeName string
	// CheckFrequency is the time between the end of a fetch and the start of
	// the next (--http-check-frequency); zero means DefaultCheckFrequency.
	CheckFrequency time.Duration
	// Timeout bounds one fetch, body included; zero means DefaultTimeout.
	Timeout time.Duration
	// Reporter, if set, receives the problems found, besides the log line.
	Reporter kubetypes.ProblemReporter
}

// Source reads static pods from a URL.
type Source struct {
	opts Options
}

// New checks opts and returns a source; Run starts it.
func New(opts Options) (*Source, error) {
	u, err := url.Parse(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("http source: manifest URL %q: %w", opts.URL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("http source: manifest URL %q: want an absolute http or https URL", opts.URL)
	}
	if opts.NodeName == "" {
		return nil, fmt.Errorf("http source %q: no node name given", opts.URL)
	}
	if err := staticpod.ValidateNodeName(opts.NodeName); err != nil {
		return nil, fmt.Errorf("http source %q: %w", opts.URL, err)
	}
	if opts.CheckFrequency < 0 || opts.Timeout < 0 {
		return nil, fmt.Errorf("http source %q: negative check frequency %v or timeout %v", opts.URL, opts.CheckFrequency, opts.Timeout)
	}
	if opts.CheckFrequency == 0 {
		opts.CheckFrequency = DefaultCheckFrequency
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	opts.Header = opts.Header.Clone()
	return &Source{opts: opts}, nil
}

// poller is the state of one Run: what the last good body was and how to
// ask the server whether it changed.
type poller struct {
	opts   Options
	client *nethttp.Client
	report func(kubetypes.Problem)
	logger klog.Logger

	// good is the last body that decoded; nil before the first.
	good         []byte
	etag         string
	lastModified string
	// failing is the error last reported; empty when the last fetch worked.
	failing string
}

// Run polls the URL and sends a SET to out whenever the pods change, until
// ctx ends.
func (s *Source) Run(ctx context.Context, out chan<- kubetypes.PodUpdate) {
	logger := klog.FromContext(ctx).WithValues("source", kubetypes.HTTPSource, "url", s.opts.URL)
	// A transport of its own, so that its idle connections end with Run.
	transport := nethttp.DefaultTransport.(*nethttp.Transport).Clone()
	defer transport.CloseIdleConnections()
	p := &poller{
		opts:   s.opts,
		client: &nethttp.Client{Transport: transport, Timeout: s.opts.Timeout},
		logger: logger,
		report: func(pr kubetypes.Problem) {
			logger.Error(pr.Err, "Pod manifest URL problem", "reason", pr.Reason)
			if s.opts.Reporter != nil {
				s.opts.Reporter.ReportProblem(pr)
			}
		},
	}
	logger.V(1).Info("Watching URL")

	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if pods, changed := p.poll(ctx); changed {
			select {
			case out <- kubetypes.PodUpdate{Op: kubetypes.SET, Source: kubetypes.HTTPSource, Pods: pods}:
			case <-ctx.Done():
				return
			}
		}
		timer.Reset(s.opts.CheckFrequency)
	}
}

// poll fetches the URL once and returns the pods when they changed.
func (p *poller) poll(ctx context.Context) ([]*v1.Pod, bool) {
	pods, changed, reason, err := p.fetch(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false // stopping, not a problem of the URL
		}
		if msg := err.Error(); msg != p.failing {
			p.failing = msg
			p.report(kubetypes.Problem{Source: kubetypes.HTTPSource, Reason: reason, Where: p.opts.URL, Err: fmt.Errorf("%w; keeping the pods of the last good response", err)})
		} else {
			p.logger.V(4).Info("Manifest URL still failing", "err", err)
		}
		return nil, false
	}
	if p.failing != "" {
		p.failing = ""
		p.logger.Info("Successfully read pods from URL")
	}
	return pods, changed
}

// fetch does one request. On error it returns the problem's reason too.
func (p *poller) fetch(ctx context.Context) (pods []*v1.Pod, changed bool, reason string, err error) {
	req, err := nethttp.NewRequestWithContext(ctx, nethttp.MethodGet, p.opts.URL, nil)
	if err != nil {
		return nil, false, kubetypes.ReasonFailedToRead, fmt.Errorf("building request: %w", err)
	}
	req.Header = p.opts.Header.Clone()
	if req.Header == nil {
		req.Header = nethttp.Header{}
	}
	if p.good != nil {
		if p.etag != "" {
			req.Header.Set("If-None-Match", p.etag)
		}
		if p.lastModified != "" {
			req.Header.Set("If-Modified-Since", p.lastModified)
		}
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, false, kubetypes.ReasonFailedToRead, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, staticpod.MaxManifestBytes+1))
	if err != nil {
		return nil, false, kubetypes.ReasonFailedToRead, fmt.Errorf("reading response body: %w", err)
	}
	if resp.StatusCode == nethttp.StatusNotModified && p.good != nil {
		return nil, false, "", nil
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, false, kubetypes.ReasonFailedToRead, fmt.Errorf("response status %s", resp.Status)
	}
	if len(body) > staticpod.MaxManifestBytes {
		return nil, false, kubetypes.ReasonFailedToRead, fmt.Errorf("response body larger than the limit of %d bytes", staticpod.MaxManifestBytes)
	}
	if p.good != nil && bytes.Equal(body, p.good) {
		p.etag, p.lastModified = resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
		return nil, false, "", nil
	}
	pods, err = staticpod.DecodePods(body, staticpod.Origin{Source: kubetypes.HTTPSource, Location: p.opts.URL, NodeName: p.opts.NodeName})
	if err != nil {
		reason = kubetypes.ReasonFailedToParse
		if errors.Is(err, staticpod.ErrInvalid) {
			reason = kubetypes.ReasonFailedValidation
		}
		return nil, false, reason, err
	}
	p.good = body
	p.etag, p.lastModified = resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	return pods, true, "", nil
}
