package chaos

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"time"

	"k8s.io/client-go/rest"
)

// stalledClient opens watches of every configmap in ns over HTTP/1.1 and
// never reads their responses, as a client that hung would.
type stalledClient struct {
	conns []net.Conn
}

func (s *stalledClient) open(cfg *rest.Config, ns string, n int) error {
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return err
	}
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return err
	}
	tlsCfg = tlsCfg.Clone()
	tlsCfg.NextProtos = []string{"http/1.1"}
	for range n {
		d := &net.Dialer{Timeout: 5 * time.Second}
		c, err := tls.DialWithDialer(d, "tcp", u.Host, tlsCfg)
		if err != nil {
			return fmt.Errorf("stalled client: dial %s: %w", u.Host, err)
		}
		req := fmt.Sprintf("GET /api/v1/namespaces/%s/configmaps?watch=true HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", ns, u.Host, cfg.BearerToken)
		c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte(req)); err != nil {
			c.Close()
			return fmt.Errorf("stalled client: write: %w", err)
		}
		s.conns = append(s.conns, c)
	}
	return nil
}

func (s *stalledClient) close() {
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
}
