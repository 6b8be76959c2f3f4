package flowcontrol

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// Wrap returns next behind priority and fairness: it belongs after
// authentication (and impersonation), before authorization, as upstream's
// chain. It puts the request's RequestInfo in the context (authorization
// reuses it), classifies the request, sets the X-Kubernetes-PF-* headers,
// and serves it once it holds a seat of its level, or answers 429.
// Long-running requests but watches are not limited (upstream's
// BasicLongRunningRequestCheck: verbs watch and proxy, subresources
// attach, exec, log, portforward and proxy); a watch holds its seat only
// until it is set up (its response headers are written).
func (c *Controller) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		info, ok := genericapirequest.RequestInfoFrom(ctx)
		if !ok {
			var err error
			if info, err = c.infos.NewRequestInfo(r); err != nil {
				// Unparsable: authorization says so; nothing to classify.
				next.ServeHTTP(w, r)
				return
			}
			ctx = genericapirequest.WithRequestInfo(ctx, info)
			r = r.WithContext(ctx)
		}
		watch := info.Verb == "watch"
		if !watch && isLongRunning(info) {
			next.ServeHTTP(w, r)
			return
		}
		var query url.Values // parsed for lists and watches only
		if watch || info.Verb == "list" {
			query = r.URL.Query()
		}
		if watch {
			defer c.watches.register(info, query)()
		}
		u, ok := genericapirequest.UserFrom(ctx)
		if !ok {
			u = &user.DefaultInfo{}
		}
		d := Digest{RequestInfo: info, User: u}
		cfg := c.config.Load()
		fs, lc := cfg.classify(d)
		// Set with their canonical names: no canonicalization per request.
		h := w.Header()
		h[priorityLevelHeader] = []string{string(lc.pl.UID)}
		h[flowSchemaHeader] = []string{string(fs.UID)}
		fm := c.metrics.flow(lc.pl.Name, fs.Name)
		distinguisher := flowDistinguisher(fs, d)
		// What the debug dumps show of the request (debug.go).
		req := &tracked{flowSchema: fs.Name, distinguisher: distinguisher, arrive: time.Now(), user: u.GetName(), info: info}
		if lc.exempt {
			s, _ := c.dispatch.acquireTracked(ctx, c.waitContext, lc, 0, workEstimate{}, nil, req)
			fm.dispatched.Inc()
			fm.executing.Inc()
			defer fm.executing.Dec()
			if !watch {
				defer s.release()
				next.ServeHTTP(w, r)
				return
			}
			// A watch executes until it is set up, as a limited one.
			iw := &initWriter{ResponseWriter: w, release: s.release}
			defer iw.initialized()
			next.ServeHTTP(iw, r)
			return
		}
		var watchers int
		switch info.Verb {
		case "create", "update", "patch", "delete":
			watchers = c.watches.interested(info)
		}
		we := estimateWork(info, query, c.objectCount, watchers, lc.maxSeats())
		fm.estimatedSeats.Observe(float64(we.seats))
		if watchers > 0 {
			fm.watchCountSamples.Observe(float64(watchers))
		}
		begin := req.arrive
		req.we = we
		s, out := c.dispatch.acquireTracked(ctx, c.waitContext, lc, flowHash(fs.Name, distinguisher), we, fm.inQueue, req)
		waited := time.Since(begin).Seconds()
		if out != executed {
			fm.waitRejected.Observe(waited)
			fm.rejectedReasons[rejectReason(ctx, lc, out)].Inc()
			tooManyRequests(w, c.dispatch.retryAfterSeconds(lc))
			return
		}
		fm.waitExecuted.Observe(waited)
		fm.dispatched.Inc()
		fm.executing.Inc()
		fm.executingSeats.Add(float64(s.width))
		release := func() {
			fm.executing.Dec()
			fm.executingSeats.Sub(float64(s.width))
			s.release()
		}
		if !watch {
			defer release()
			next.ServeHTTP(w, r)
			return
		}
		iw := &initWriter{ResponseWriter: w, release: release}
		defer iw.initialized()
		next.ServeHTTP(iw, r)
	})
}

// rejectReason is the reason label of a rejection, upstream's: a level
// without queues refuses at its concurrency limit, a full queue refuses
// at once, a wait ends by its time limit or by the client going away.
func rejectReason(ctx context.Context, lc *levelConfig, out outcome) string {
	switch {
	case out == rejectedFull && (lc.reject || lc.queues == 0):
		return reasonConcurrencyLimit
	case out == rejectedFull:
		return reasonQueueFull
	case ctx.Err() != nil:
		return reasonCancelled
	}
	return reasonTimeOut
}

// The response headers (flowcontrolv1.ResponseHeaderMatched*), in
// net/http's canonical form (TestHeaderNamesAreCanonical).
const (
	priorityLevelHeader = "X-Kubernetes-Pf-Prioritylevel-Uid"
	flowSchemaHeader    = "X-Kubernetes-Pf-Flowschema-Uid"
)

// waitContext bounds how long a request may wait in its queue: a quarter
// of its deadline, or of the request timeout without one, at most a
// minute (upstream's getRequestWaitContext).
func (c *Controller) waitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	limit := c.waitLimit
	if deadline, ok := ctx.Deadline(); ok {
		limit = time.Until(deadline) / 4
	}
	return context.WithTimeout(ctx, min(limit, time.Minute))
}

// isLongRunning is kube-apiserver's long-running check of a request.
func isLongRunning(info *genericapirequest.RequestInfo) bool {
	switch info.Verb {
	case "watch", "proxy":
		return true
	}
	if !info.IsResourceRequest {
		return false
	}
	switch info.Subresource {
	case "attach", "exec", "log", "portforward", "proxy":
		return true
	}
	return false
}

// tooManyRequests is upstream's rejection, byte for byte.
func tooManyRequests(w http.ResponseWriter, retryAfter int64) {
	w.Header().Set("Retry-After", strconv.FormatInt(retryAfter, 10))
	http.Error(w, "Too many requests, please try again later.", http.StatusTooManyRequests)
}

// initWriter gives a watch's seat back when the watch is set up: when its
// response starts (the watch handler writes the headers once the storage
// watch is established), or when the handler returns.
type initWriter struct {
	http.ResponseWriter
	once    sync.Once
	release func()
}

func (w *initWriter) initialized() { w.once.Do(w.release) }

func (w *initWriter) WriteHeader(code int) {
	w.initialized()
	w.ResponseWriter.WriteHeader(code)
}

func (w *initWriter) Write(b []byte) (int, error) {
	w.initialized()
	return w.ResponseWriter.Write(b)
}

func (w *initWriter) Flush() {
	w.initialized()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *initWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
