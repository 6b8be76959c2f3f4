package metrics

import (
	"bufio"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// component is the component label upstream's apiserver uses.
const component = "apiserver"

// Request describes a resource request for the request metrics, in the
// terms of k8s.io/apiserver's RequestInfo.
type Request struct {
	// Verb is the Kubernetes verb: get, list, watch, create, update,
	// patch, delete, deletecollection (or connect, proxy).
	Verb                                  string
	Group, Version, Resource, Subresource string
	// Namespace and Name decide the scope label: resource (a named
	// object, or a create), namespace, or cluster.
	Namespace, Name string
}

// connectSubresources are reported with verb CONNECT, as upstream does.
var connectSubresources = map[string]bool{"log": true, "exec": true, "portforward": true, "attach": true, "proxy": true}

// httpVerbs maps Kubernetes verbs to the verb label upstream reports (the
// route's action: POST for create, PUT for update, LIST for a collection
// GET).
var httpVerbs = map[string]string{
	"get": "GET", "list": "LIST", "watch": "WATCH", "create": "POST", "update": "PUT",
	"patch": "PATCH", "delete": "DELETE", "deletecollection": "DELETECOLLECTION",
	"connect": "CONNECT", "proxy": "PROXY",
}

// labels returns the request's label values in requestLabels order.
func (q Request) labels(r *http.Request) []string {
	return []string{reportedVerb(q, r), dryRun(r.URL), q.Group, q.Version, q.Resource, q.Subresource, q.scope(), component}
}

func (q Request) scope() string {
	switch {
	case q.Name != "" || q.Verb == "create":
		return "resource"
	case q.Namespace != "":
		return "namespace"
	default:
		return "cluster"
	}
}

// reportedVerb is upstream's cleanVerb: a watch=true list is WATCH, a
// server-side apply PATCH is APPLY, log/exec/... are CONNECT, and anything
// unknown is "other".
func reportedVerb(q Request, r *http.Request) string {
	v, ok := httpVerbs[q.Verb]
	if !ok {
		return "other"
	}
	if (v == "GET" || v == "LIST") && isWatch(r.URL) {
		v = "WATCH"
	}
	if v == "PATCH" && r.Header.Get("Content-Type") == "application/apply-patch+yaml" {
		v = "APPLY"
	}
	if q.Subresource != "" && connectSubresources[q.Subresource] {
		v = "CONNECT"
	}
	return v
}

func isWatch(u *url.URL) bool {
	vs := u.Query()["watch"]
	if len(vs) == 0 {
		return false
	}
	v := strings.ToLower(vs[0])
	return v != "0" && v != "false"
}

// dryRun is upstream's cleanDryRun: "" when absent, the sorted distinct
// values when all are valid ("All"), "invalid" otherwise.
func dryRun(u *url.URL) string {
	if !strings.Contains(u.RawQuery, "dryRun") {
		return ""
	}
	vs := slices.Clone(u.Query()["dryRun"])
	for _, v := range vs {
		if v != "All" {
			return "invalid"
		}
	}
	slices.Sort(vs)
	return strings.Join(slices.Compact(vs), ",")
}

// ObserveRequest records one finished request.
func (m *Metrics) ObserveRequest(r *http.Request, q Request, code int, elapsed time.Duration) {
	l := q.labels(r)
	m.requests.WithLabelValues(append(l, strconv.Itoa(code))...).Inc()
	m.durations.WithLabelValues(l...).Observe(elapsed.Seconds())
}

// Instrument returns next wrapped so that it records q's request count,
// code and duration, and counts it in apiserver_longrunning_requests while
// it runs when it is a watch or a connect. The ResponseWriter handed to next
// keeps http.Flusher and http.Hijacker, so watch streams and upgrades work.
func (m *Metrics) Instrument(q Request, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		if v := reportedVerb(q, r); v == "WATCH" || v == "CONNECT" {
			g := m.longRunning.WithLabelValues(v, q.Group, q.Version, q.Resource, q.Subresource, q.scope(), component)
			g.Inc()
			defer g.Dec()
		}
		sw := &statusWriter{ResponseWriter: w}
		defer func() { m.ObserveRequest(r, q, sw.code(), time.Since(start)) }()
		next.ServeHTTP(sw, r)
	})
}

// statusWriter remembers the status code written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// code is the status sent; a handler that wrote nothing sent 200.
func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.status == 0 {
		w.status = http.StatusSwitchingProtocols
	}
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
