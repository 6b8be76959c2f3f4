package apiserver

import (
	"net/http"
	"slices"

	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// DefaultMaxRequestsInFlight and DefaultMaxMutatingRequestsInFlight are
// kube-apiserver's --max-requests-inflight and
// --max-mutating-requests-inflight.
const (
	DefaultMaxRequestsInFlight         = 400
	DefaultMaxMutatingRequestsInFlight = 200
)

// inflightKind is which limit a request counts against.
type inflightKind int

const (
	uncounted inflightKind = iota // long-running, or of system:masters
	readOnlyRequest
	mutatingRequest
)

// classifyInflight is upstream's max-in-flight decision: long-running
// requests (watches, logs, exec...) and requests of system:masters are not
// limited; get and list are read-only; everything else is mutating.
func classifyInflight(r *http.Request, longRunning bool) inflightKind {
	if longRunning {
		return uncounted
	}
	if u, ok := genericapirequest.UserFrom(r.Context()); ok && slices.Contains(u.GetGroups(), user.SystemPrivilegedGroup) {
		return uncounted
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return readOnlyRequest
	}
	return mutatingRequest
}

// inflight bounds the requests served at once, read-only and mutating
// apart, as upstream's max-in-flight filter (kube-apiserver with priority
// and fairness off). A nil channel is no limit.
type inflight struct {
	readOnly, mutating chan struct{}
}

// newInflight makes the limits: 0 means the default, negative none.
func newInflight(readOnly, mutating int) inflight {
	slots := func(n, def int) chan struct{} {
		switch {
		case n < 0:
			return nil
		case n == 0:
			n = def
		}
		return make(chan struct{}, n)
	}
	return inflight{
		readOnly: slots(readOnly, DefaultMaxRequestsInFlight),
		mutating: slots(mutating, DefaultMaxMutatingRequestsInFlight),
	}
}

func (f *inflight) slots(k inflightKind) chan struct{} {
	switch k {
	case readOnlyRequest:
		return f.readOnly
	case mutatingRequest:
		return f.mutating
	}
	return nil
}

// acquire takes a slot for r (isLongRunning as given) without waiting; it reports false when r's
// kind is at its limit. An acquired kind is given back with release.
func (f *inflight) acquire(r *http.Request, longRunning bool) (inflightKind, bool) {
	k := classifyInflight(r, longRunning)
	c := f.slots(k)
	if c == nil {
		return uncounted, true
	}
	select {
	case c <- struct{}{}:
		return k, true
	default:
		return k, false
	}
}

func (f *inflight) release(k inflightKind) {
	if c := f.slots(k); c != nil {
		<-c
	}
}

// tooManyRequests is upstream's answer past the limit, byte for byte: a
// plain-text 429 asking to retry after a second (client-go retries it).
func tooManyRequests(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	http.Error(w, "Too many requests, please try again later.", http.StatusTooManyRequests)
}
