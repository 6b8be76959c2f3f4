package kite

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kite-project/kite/controllers"
	"github.com/kite-project/kite/registry/builtin"
)

// Upstream's ports of kube-scheduler and kube-controller-manager, which
// kube-apiserver asks for componentstatuses.
const (
	kubeSchedulerPort         = 10259
	kubeControllerManagerPort = 10257
	// componentProbeTimeout bounds one probe of a component (upstream: 20 s).
	componentProbeTimeout = 5 * time.Second
)

// componentChecks are the components that componentstatuses reports, as
// kube-apiserver's: the scheduler, the controller manager and etcd
// ("etcd-0"). Their health is what this server knows: etcd answers a
// read; the scheduler and the controllers are healthy when they run in
// this server (opts.Controllers), and are asked at upstream's ports, as
// kube-apiserver asks them, when they run elsewhere.
func (s *Server) componentChecks(opts Options) map[string]builtin.ComponentCheck {
	names := opts.Controllers
	if names == nil {
		names = controllers.EmbeddedDefault()
	}
	scheduler, controllerManager := componentsInProcess(names)
	return map[string]builtin.ComponentCheck{
		"scheduler":          inProcessOrProbe(scheduler, kubeSchedulerPort),
		"controller-manager": inProcessOrProbe(controllerManager, kubeControllerManagerPort),
		"etcd-0": func(ctx context.Context) builtin.ComponentHealth {
			ctx, cancel := context.WithTimeout(ctx, componentProbeTimeout)
			defer cancel()
			if _, err := s.etcd.Client().Get(ctx, "health"); err != nil {
				return builtin.ComponentHealth{Status: v1.ConditionFalse, Err: err}
			}
			return builtin.ComponentHealth{Status: v1.ConditionTrue, Message: "ok"}
		},
	}
}

// componentsInProcess tells whether the controllers named run the
// scheduler, and any of kube-controller-manager's controllers.
func componentsInProcess(names []string) (scheduler, controllerManager bool) {
	scheduler = slices.Contains(names, controllers.Scheduler)
	controllerManager = slices.ContainsFunc(names, func(n string) bool { return n != controllers.Scheduler })
	return scheduler, controllerManager
}

func inProcessOrProbe(inProcess bool, port int) builtin.ComponentCheck {
	if inProcess {
		return func(context.Context) builtin.ComponentHealth {
			return builtin.ComponentHealth{Status: v1.ConditionTrue, Message: "ok"}
		}
	}
	return func(ctx context.Context) builtin.ComponentHealth { return probeHealthz(ctx, port) }
}

// probeHealthz is upstream's componentstatus.HttpServer check: GET
// https://127.0.0.1:<port>/healthz, the certificate not verified; a
// status below 400 is healthy, another failing, both with the body as
// message; no answer is unknown, with the error.
func probeHealthz(ctx context.Context, port int) builtin.ComponentHealth {
	ctx, cancel := context.WithTimeout(ctx, componentProbeTimeout)
	defer cancel()
	url := "https://127.0.0.1:" + strconv.Itoa(port) + "/healthz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return builtin.ComponentHealth{Status: v1.ConditionUnknown, Err: fmt.Errorf("failed to construct probe request: %w", err)}
	}
	transport := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}
	defer transport.CloseIdleConnections()
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		return builtin.ComponentHealth{Status: v1.ConditionUnknown, Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 10<<10))
	if err != nil {
		return builtin.ComponentHealth{Status: v1.ConditionUnknown, Err: fmt.Errorf("read %s: %w", url, err)}
	}
	if resp.StatusCode >= http.StatusBadRequest {
		return builtin.ComponentHealth{Status: v1.ConditionFalse, Message: string(body)}
	}
	return builtin.ComponentHealth{Status: v1.ConditionTrue, Message: string(body)}
}
