package prober

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kite-project/kite/agent/runtime"
)

// Outcome is what one check of a probe found, before thresholds apply.
type Outcome int8

const (
	// OutcomeSuccess: the check passed.
	OutcomeSuccess Outcome = iota
	// OutcomeWarning: passed, with something worth an event (an HTTP
	// redirect that was not followed).
	OutcomeWarning
	// OutcomeFailure: the check failed; the output says why.
	OutcomeFailure
)

func (o Outcome) String() string {
	switch o {
	case OutcomeSuccess:
		return "success"
	case OutcomeWarning:
		return "warning"
	case OutcomeFailure:
		return "failure"
	}
	return fmt.Sprintf("Outcome(%d)", int8(o))
}

// Execer runs a command in a container; runtime.Service satisfies it.
type Execer interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (runtime.ExecResult, error)
}

var _ Execer = runtime.Service(nil)

// Target is the container instance a check is run against.
type Target struct {
	// Container is the spec; its ports resolve the probe's named ports.
	Container *v1.Container
	// ContainerID is the runtime's ID of the running instance (exec).
	ContainerID string
	// PodIP is the default host of httpGet, tcpSocket and grpc probes.
	PodIP string
}

// Checker runs single checks of probes. It is safe for concurrent use.
type Checker struct {
	exec Execer
	// http carries every httpGet check; it keeps no connections, as
	// upstream's prober does not, so a probe always opens a new one.
	http *http.Transport
}

// NewChecker returns a Checker whose exec checks run through exec, which
// may be nil when no exec probe will be run.
func NewChecker(exec Execer) *Checker {
	return &Checker{exec: exec, http: newHTTPTransport()}
}

// Check runs spec's handler once against t, bounded by spec's timeout.
//
// A failure of the thing probed (a non-zero exit, a 500, a refused
// connection, a NOT_SERVING answer) is OutcomeFailure with upstream's
// output; an error means the check could not be made at all (a port name
// the container does not have, a command the runtime could not start)
// and its outcome means nothing, as upstream discards such results.
func (c *Checker) Check(ctx context.Context, spec *v1.Probe, t Target) (Outcome, string, error) {
	timeout := time.Duration(spec.TimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = time.Second
	}
	h := spec.ProbeHandler
	switch {
	case h.Exec != nil:
		if c.exec == nil {
			return OutcomeFailure, "", fmt.Errorf("exec probe of container %q: no runtime to exec in", t.Container.Name)
		}
		return checkExec(ctx, c.exec, t.ContainerID, h.Exec.Command, timeout)
	case h.HTTPGet != nil:
		req, err := newHTTPRequest(ctx, h.HTTPGet, t.Container, t.PodIP)
		if err != nil {
			return OutcomeFailure, "", err
		}
		return checkHTTP(req, c.http, timeout)
	case h.TCPSocket != nil:
		port, err := resolvePort(h.TCPSocket.Port, t.Container)
		if err != nil {
			return OutcomeFailure, "", err
		}
		host := h.TCPSocket.Host
		if host == "" {
			host = t.PodIP
		}
		return checkTCP(ctx, host, port, timeout)
	case h.GRPC != nil:
		service := ""
		if h.GRPC.Service != nil {
			service = *h.GRPC.Service
		}
		return checkGRPC(ctx, t.PodIP, int(h.GRPC.Port), service, timeout)
	}
	return OutcomeFailure, "", fmt.Errorf("missing probe handler for container %q", t.Container.Name)
}

// resolvePort turns a probe's port into a number: a number as it is, a
// name through the container's ports, and, as upstream's last resort, a
// name that is a number written as a string.
func resolvePort(p intstr.IntOrString, c *v1.Container) (int, error) {
	port := -1
	switch p.Type {
	case intstr.Int:
		port = p.IntValue()
	case intstr.String:
		found := false
		for _, cp := range c.Ports {
			if cp.Name == p.StrVal {
				port, found = int(cp.ContainerPort), true
				break
			}
		}
		if !found {
			n, err := strconv.Atoi(p.StrVal)
			if err != nil {
				return -1, err
			}
			port = n
		}
	default:
		return -1, fmt.Errorf("intOrString had no kind: %+v", p)
	}
	if port > 0 && port < 65536 {
		return port, nil
	}
	return port, fmt.Errorf("invalid port number: %v", port)
}
