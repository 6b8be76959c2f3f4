package backend

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// ExternalOptions name an etcd cluster that runs outside Kite.
type ExternalOptions struct {
	// Servers are the cluster's client URLs (http:// or https://).
	Servers []string
	// CAFile verifies the servers' certificates; CertFile and KeyFile are
	// the client certificate. Any of them set means TLS.
	CAFile, CertFile, KeyFile string
	// DialTimeout bounds the connectivity check of Connect. Zero means 5 s.
	DialTimeout time.Duration
}

// Connect returns a client of the external cluster once a read has gone
// through and the servers' versions are recent enough (CheckVersion): a
// wrong URL, a closed port, a bad certificate or a too old etcd is an error
// at start, not at the first request.
func Connect(ctx context.Context, opts ExternalOptions) (*clientv3.Client, error) {
	if len(opts.Servers) == 0 {
		return nil, errors.New("etcd: no servers given")
	}
	for _, s := range opts.Servers {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("etcd server %q: want http(s)://host:port", s)
		}
	}
	tlsConfig, err := opts.tlsConfig()
	if err != nil {
		return nil, err
	}
	timeout := opts.DialTimeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	// The gRPC client only reports that its deadline passed; a plain dial
	// first says why ("connection refused") and does not wait for it.
	if err := dialAny(ctx, opts.Servers, timeout, tlsConfig); err != nil {
		return nil, fmt.Errorf("etcd at %v not reachable: %w", opts.Servers, err)
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   opts.Servers,
		DialTimeout: timeout,
		TLS:         tlsConfig,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", opts.Servers, err)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// A linearizable read needs a quorum, so it checks the cluster, not
	// only the connection. The key need not exist.
	if _, err := c.Get(cctx, "kite-connectivity-check", clientv3.WithCountOnly()); err != nil {
		c.Close()
		if rerr := tlsRejection(ctx, opts.Servers, tlsConfig); rerr != nil {
			err = rerr // "certificate required" says more than a deadline
		}
		return nil, fmt.Errorf("etcd at %v not reachable within %s: %w", opts.Servers, timeout, err)
	}
	if err := checkServerVersions(ctx, c, opts.Servers, timeout); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (o ExternalOptions) tlsConfig() (*tls.Config, error) {
	if o.CAFile == "" && o.CertFile == "" && o.KeyFile == "" {
		return nil, nil
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		return nil, errors.New("etcd TLS: give both a certificate file and a key file, or neither")
	}
	info := transport.TLSInfo{CertFile: o.CertFile, KeyFile: o.KeyFile, TrustedCAFile: o.CAFile}
	cfg, err := info.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("etcd TLS (ca %q, cert %q, key %q): %w", o.CAFile, o.CertFile, o.KeyFile, err)
	}
	return cfg, nil
}

// dialAny returns nil if a connection (TCP, and TLS for https) to one of
// the servers opens, and otherwise the first server's error.
func dialAny(ctx context.Context, servers []string, timeout time.Duration, tlsConfig *tls.Config) error {
	var first error
	d := &net.Dialer{Timeout: timeout}
	for _, s := range servers {
		u, err := url.Parse(s)
		if err != nil {
			return err
		}
		var conn net.Conn
		if u.Scheme == "https" {
			// The handshake checks the server's certificate against the CA
			// the user gave ("signed by unknown authority").
			td := &tls.Dialer{NetDialer: d, Config: tlsConfig}
			conn, err = td.DialContext(ctx, "tcp", u.Host)
		} else {
			conn, err = d.DialContext(ctx, "tcp", u.Host)
		}
		if err == nil {
			conn.Close()
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// tlsRejection looks for the reason a TLS server refused us after the
// handshake: with TLS 1.3 the server checks the client certificate only
// after the client has finished, so a missing or unaccepted certificate
// shows as an alert on the first read. It returns nil if no server says so.
func tlsRejection(ctx context.Context, servers []string, tlsConfig *tls.Config) error {
	const wait = time.Second
	for _, s := range servers {
		u, err := url.Parse(s)
		if err != nil || u.Scheme != "https" {
			continue
		}
		td := &tls.Dialer{NetDialer: &net.Dialer{Timeout: wait}, Config: tlsConfig}
		conn, err := td.DialContext(ctx, "tcp", u.Host)
		if err != nil {
			return err
		}
		conn.SetReadDeadline(time.Now().Add(wait))
		_, err = conn.Read(make([]byte, 1))
		conn.Close()
		var ne net.Error
		if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
			return err
		}
	}
	return nil
}
