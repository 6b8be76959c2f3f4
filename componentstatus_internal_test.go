package kite

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kite-project/kite/controllers"
)

func TestComponentsInProcess(t *testing.T) {
	for _, tc := range []struct {
		name                         string
		names                        []string
		scheduler, controllerManager bool
	}{
		{"none", []string{}, false, false},
		{"the scheduler alone", []string{controllers.Scheduler}, true, false},
		{"controllers but no scheduler", controllers.EmbeddedDefault(), false, true},
		{"all", controllers.All(), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, cm := componentsInProcess(tc.names)
			if s != tc.scheduler || cm != tc.controllerManager {
				t.Errorf("componentsInProcess(%v) = %v, %v; want %v, %v", tc.names, s, cm, tc.scheduler, tc.controllerManager)
			}
		})
	}
}

// TestProbeHealthzAsUpstream: a component that runs elsewhere is asked
// at its port as kube-apiserver's componentstatus probe asks it.
func TestProbeHealthzAsUpstream(t *testing.T) {
	serve := func(code int, body string) int {
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/healthz" {
				http.NotFound(w, r)
				return
			}
			w.WriteHeader(code)
			w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
		p, _ := strconv.Atoi(port)
		return p
	}
	closed := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		return port
	}
	for _, tc := range []struct {
		name    string
		port    int
		status  v1.ConditionStatus
		message string
		err     string
	}{
		{"healthy", serve(http.StatusOK, "ok"), v1.ConditionTrue, "ok", ""},
		{"failing", serve(http.StatusInternalServerError, "[-]poststarthook failed"), v1.ConditionFalse, "[-]poststarthook failed", ""},
		{"not there", closed(), v1.ConditionUnknown, "", "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := probeHealthz(context.Background(), tc.port)
			if h.Status != tc.status || h.Message != tc.message || (tc.err == "") != (h.Err == nil) || (h.Err != nil && !strings.Contains(h.Err.Error(), tc.err)) {
				t.Errorf("probeHealthz = %+v, want %s %q error %q", h, tc.status, tc.message, tc.err)
			}
		})
	}
}
