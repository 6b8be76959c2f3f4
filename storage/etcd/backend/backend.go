// Package backend gives Kite the etcd it stores into: an embedded etcd
// under the data directory, or an external cluster named by its client URLs
// (kube-apiserver's --etcd-servers). Callers get a connected client either
// way and do not care which.
package backend

import (
	"context"
	"fmt"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kite-project/kite/storage/etcd/embedded"
)

// Options choose and configure the etcd.
type Options struct {
	// External, when it names servers, is the etcd cluster to use; then
	// nothing is embedded and Embedded is ignored.
	External ExternalOptions
	// Embedded configures the in-process etcd used when External names
	// no servers.
	Embedded embedded.Options
}

// Backend is an etcd that is running and reachable.
type Backend struct {
	client *clientv3.Client
	// server is the embedded etcd; nil for an external cluster.
	server    *embedded.Server
	endpoints []string
	closeOnce sync.Once
}

// Open starts the embedded etcd, or connects to the external cluster and
// checks that it answers. The context bounds only the start.
func Open(ctx context.Context, opts Options) (*Backend, error) {
	if len(opts.External.Servers) > 0 {
		c, err := Connect(ctx, opts.External)
		if err != nil {
			return nil, err
		}
		return &Backend{client: c, endpoints: opts.External.Servers}, nil
	}
	s, err := embedded.Start(ctx, opts.Embedded)
	if err != nil {
		return nil, err
	}
	c, err := s.Client()
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("client for embedded etcd at %v: %w", s.ClientURLs(), err)
	}
	return &Backend{client: c, server: s, endpoints: s.ClientURLs()}, nil
}

// Client is a client of this etcd, owned by the Backend: do not close it.
func (b *Backend) Client() *clientv3.Client { return b.client }

// Endpoints are etcd's client URLs.
func (b *Backend) Endpoints() []string { return b.endpoints }

// Embedded reports whether etcd runs in this process.
func (b *Backend) Embedded() bool { return b.server != nil }

// Err reports a fatal error of the embedded etcd. For an external cluster
// it never fires: its outages are errors of the requests that meet them.
func (b *Backend) Err() <-chan error {
	if b.server == nil {
		return nil
	}
	return b.server.Err()
}

// Close closes the client and stops the embedded etcd. It is safe to call
// more than once.
func (b *Backend) Close() {
	b.closeOnce.Do(func() {
		b.client.Close()
		if b.server != nil {
			b.server.Close()
		}
	})
}
