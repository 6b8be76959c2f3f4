package flowcontrol

import (
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/kite-project/kite/listwatch"
)

// bootstrapped is a Controller configured with upstream's bootstrap
// objects, as a server has them (its reflectors are not run).
func bootstrapped(tb testing.TB) *Controller {
	tb.Helper()
	c, err := New(Options{FlowSchemas: listwatch.ListWatchFuncs{}, PriorityLevels: listwatch.ListWatchFuncs{}})
	if err != nil {
		tb.Fatal(err)
	}
	var pls, fss []runtime.Object
	for _, pl := range append(append([]*flowcontrolv1.PriorityLevelConfiguration{}, bootstrap.MandatoryPriorityLevelConfigurations...), bootstrap.SuggestedPriorityLevelConfigurations...) {
		pls = append(pls, pl)
	}
	for _, fs := range append(append([]*flowcontrolv1.FlowSchema{}, bootstrap.MandatoryFlowSchemas...), bootstrap.SuggestedFlowSchemas...) {
		fss = append(fss, fs)
	}
	if err := (objStore[*flowcontrolv1.PriorityLevelConfiguration]{c, c.pls}).Replace(pls, ""); err != nil {
		tb.Fatal(err)
	}
	if err := (objStore[*flowcontrolv1.FlowSchema]{c, c.fss}).Replace(fss, ""); err != nil {
		tb.Fatal(err)
	}
	return c
}

// BenchmarkFilter measures what priority and fairness adds to a request:
// the same request through a handler that does nothing, alone and behind
// Wrap, for a user of a limited level (classification through the
// suggested schemas, a seat taken and given back, the wait context) and
// for system:masters (exempt, classified by the first schema). The
// request carries its RequestInfo already: without priority and fairness
// authorization parses it, with it the filter does and authorization
// reuses it, so that parse is no overhead of either ("requestinfo"
// measures it).
func BenchmarkFilter(b *testing.B) {
	c := bootstrapped(b)
	noop := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	users := map[string]user.Info{
		"user":           &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}},
		"system:masters": &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}},
	}
	parse := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		if _, err := c.infos.NewRequestInfo(r); err != nil {
			b.Fatal(err)
		}
	})
	for _, tt := range []struct {
		name string
		h    http.Handler
		user string
	}{
		{"without", noop, "user"},
		{"with/user", c.Wrap(noop), "user"},
		{"with/system:masters", c.Wrap(noop), "system:masters"},
		{"requestinfo", parse, "user"},
	} {
		b.Run(tt.name, func(b *testing.B) {
			r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/pods?limit=500", nil)
			info, err := c.infos.NewRequestInfo(r)
			if err != nil {
				b.Fatal(err)
			}
			r = r.WithContext(genericapirequest.WithRequestInfo(genericapirequest.WithUser(r.Context(), users[tt.user]), info))
			w := discard{h: http.Header{}}
			b.ReportAllocs()
			before := cpuTime(b)
			for b.Loop() {
				tt.h.ServeHTTP(w, r)
			}
			// The process's CPU time per request: on a loaded machine
			// ns/op (wall time) counts the time other processes ran.
			b.ReportMetric(float64(cpuTime(b)-before)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{ h http.Header }

func (d discard) Header() http.Header       { return d.h }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}
