package prober

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// UserAgent is what probes send unless the spec sets one: upstream's
// "kube-probe/<major>.<minor>" for the version Kite serves (kite.go).
const UserAgent = "kube-probe/1.37"

// maxRedirects is where a chain of same-host redirects stops, as Go's
// and upstream's default.
const maxRedirects = 10

func newHTTPTransport() *http.Transport {
	return &http.Transport{
		// Probes go to the container, never through a proxy from the
		// agent's environment; certificates are not checked, as upstream.
		Proxy:               nil,
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // upstream's probes do not verify
		DisableKeepAlives:   true,
		DisableCompression:  true,
		DialContext:         probeDialer().DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
	}
}

// newHTTPRequest builds an httpGet probe's request as upstream does:
// scheme lower-cased (http when empty), host the pod IP unless set, the
// port by number or container port name, the path as written, the spec's
// headers (a Host header sets the request's host), and User-Agent and
// Accept: */* unless the spec sets them (an empty Accept removes it).
func newHTTPRequest(ctx context.Context, g *v1.HTTPGetAction, c *v1.Container, podIP string) (*http.Request, error) {
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	host := g.Host
	if host == "" {
		host = podIP
	}
	port, err := resolvePort(g.Port, c)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(g.Path)
	if err != nil {
		// Too late to reject the path; send it as written, as upstream.
		u = &url.URL{Path: g.Path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("httpGet probe of %s: %w", u, err)
	}
	headers := make(http.Header)
	for _, h := range g.HTTPHeaders {
		headers.Add(h.Name, h.Value)
	}
	if _, ok := headers["User-Agent"]; !ok {
		headers.Set("User-Agent", UserAgent)
	}
	if _, ok := headers["Accept"]; !ok {
		headers.Set("Accept", "*/*")
	} else if headers.Get("Accept") == "" {
		headers.Del("Accept")
	}
	req.Header = headers
	req.Host = headers.Get("Host")
	return req, nil
}

// checkHTTP sends req: 200-399 is success, anything else a failure whose
// output is "HTTP probe failed with statuscode: <n>" (never the body,
// which may hold what the application did not mean to publish), and a
// connection or timeout error a failure with that error's text.
// Redirects are followed to the same host only; a redirect elsewhere
// ends the chain and is a warning, as upstream.
func checkHTTP(req *http.Request, transport http.RoundTripper, timeout time.Duration) (Outcome, string, error) {
	client := &http.Client{Transport: transport, Timeout: timeout, CheckRedirect: SameHostRedirects}
	res, err := client.Do(req)
	if err != nil {
		return OutcomeFailure, err.Error(), nil
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxOutput))
	if err != nil {
		return OutcomeFailure, "", fmt.Errorf("httpGet probe of %s: reading the body: %w", req.URL, err)
	}
	if res.StatusCode >= http.StatusOK && res.StatusCode < http.StatusBadRequest {
		if res.StatusCode >= http.StatusMultipleChoices {
			return OutcomeWarning, fmt.Sprintf("Probe terminated redirects, Response body: %v", string(b)), nil
		}
		return OutcomeSuccess, string(b), nil
	}
	return OutcomeFailure, fmt.Sprintf("HTTP probe failed with statuscode: %d", res.StatusCode), nil
}

// SameHostRedirects is the redirect policy of probes and lifecycle hooks,
// as upstream's RedirectChecker(false): follow a redirect to the same host
// only (at most 10); one elsewhere ends the chain with its response.
func SameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= maxRedirects {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}
