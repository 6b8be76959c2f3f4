package prober

import (
	"net"
	"syscall"
)

// probeDialer dials with SO_LINGER 1 s, as upstream's ProbeDialer does:
// the connection is reset at close instead of lingering in TIME_WAIT, so
// that frequent probes do not use up the host's ephemeral ports.
func probeDialer() *net.Dialer {
	return &net.Dialer{
		Control: func(_, _ string, c syscall.RawConn) error {
			return c.Control(func(fd uintptr) {
				_ = syscall.SetsockoptLinger(int(fd), syscall.SOL_SOCKET, syscall.SO_LINGER, &syscall.Linger{Onoff: 1, Linger: 1})
			})
		},
	}
}
