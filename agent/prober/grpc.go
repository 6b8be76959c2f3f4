package prober

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// checkGRPC asks host:port's grpc.health.v1.Health service about service
// ("" for the server as a whole), without TLS, as upstream: SERVING is
// success; any other answer, no answer in time, or no health service is
// a failure with upstream's output.
func checkGRPC(ctx context.Context, host string, port int, service string, timeout time.Duration) (Outcome, string, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	dialer := probeDialer()
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithUserAgent(UserAgent),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			return dialer.DialContext(ctx, "tcp", a)
		}),
	)
	if err != nil {
		return OutcomeFailure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err), nil
	}
	defer conn.Close()

	// Upstream dials blocking until connected: a server that is not
	// listening yet is given the whole timeout to come up.
	if err := waitReady(ctx, conn); err != nil {
		return OutcomeFailure, fmt.Sprintf("timeout: failed to connect service %q within %v: %+v", addr, timeout, err), nil
	}

	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		if st, ok := status.FromError(err); ok {
			switch st.Code() {
			case codes.Unimplemented:
				return OutcomeFailure, fmt.Sprintf("error: this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", st.Message()), nil
			case codes.DeadlineExceeded:
				return OutcomeFailure, fmt.Sprintf("timeout: health rpc did not complete within %v", timeout), nil
			}
		}
		return OutcomeFailure, fmt.Sprintf("error: health rpc probe failed: %+v", err), nil
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return OutcomeFailure, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String()), nil
	}
	return OutcomeSuccess, "service healthy", nil
}

// waitReady connects conn and waits until it is ready or ctx ends.
func waitReady(ctx context.Context, conn *grpc.ClientConn) error {
	conn.Connect()
	for {
		s := conn.GetState()
		if s == connectivity.Ready {
			return nil
		}
		if s == connectivity.Idle {
			conn.Connect()
		}
		if !conn.WaitForStateChange(ctx, s) {
			return ctx.Err()
		}
	}
}
