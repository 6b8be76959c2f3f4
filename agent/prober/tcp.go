package prober

import (
	"context"
	"net"
	"strconv"
	"time"
)

// checkTCP succeeds when a connection to host:port opens within timeout.
func checkTCP(ctx context.Context, host string, port int, timeout time.Duration) (Outcome, string, error) {
	d := probeDialer()
	d.Timeout = timeout
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		// A refusal and a timeout are both the container's failure.
		return OutcomeFailure, err.Error(), nil
	}
	_ = conn.Close()
	return OutcomeSuccess, "", nil
}
