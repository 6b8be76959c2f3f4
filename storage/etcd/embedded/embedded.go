// Package embedded runs an etcd server inside the Kite process.
//
// Kite embeds etcd by default so that one binary, with no set-up, has real
// durable storage. The server listens on 127.0.0.1 only; ports that are not
// given are picked free by the kernel, and the URLs actually bound are
// reported by Server.ClientURLs.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Options configures an embedded etcd server.
type Options struct {
	// DataDir holds etcd's WAL and snapshot. It is created if missing.
	DataDir string
	// ClientURL and PeerURL are where etcd listens. Empty means
	// http://127.0.0.1:0, a free port chosen by the kernel.
	ClientURL string
	PeerURL   string
	// UnsafeNoFsync turns off fsync: for tests only, where losing the
	// data on power failure does not matter.
	UnsafeNoFsync bool
	// StartTimeout bounds how long Start waits for etcd to be ready.
	// Zero means 60 s.
	StartTimeout time.Duration
	// LogLevel is etcd's own log level ("error" when empty).
	LogLevel string
	// MaxRequestBytes is the largest request etcd accepts. Zero means
	// 3 MiB + margin so that every object the API server admits fits.
	MaxRequestBytes uint
}

// Server is a running embedded etcd.
type Server struct {
	etcd       *embed.Etcd
	clientURLs []string
}

// ErrDataDirLocked is returned when another process holds the data directory.
var ErrDataDirLocked = errors.New("embedded etcd: data directory is in use by another process")

// Start starts etcd and waits until it serves requests. The context bounds
// only the start; the server runs until Close.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.DataDir == "" {
		return nil, errors.New("embedded etcd: no data directory given")
	}
	if err := prepareDataDir(opts.DataDir); err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = "kite"
	cfg.Dir = filepath.Join(opts.DataDir, "etcd")
	cfg.UnsafeNoFsync = opts.UnsafeNoFsync
	cfg.MaxRequestBytes = opts.MaxRequestBytes
	if cfg.MaxRequestBytes == 0 {
		cfg.MaxRequestBytes = 4 * 1024 * 1024
	}
	clientURL, err := parseURL(opts.ClientURL)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: client URL %q: %w", opts.ClientURL, err)
	}
	peerURL, err := parseURL(opts.PeerURL)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: peer URL %q: %w", opts.PeerURL, err)
	}
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	level := opts.LogLevel
	if level == "" {
		level = "error"
	}
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: log level %q: %w", level, err)
	}
	zcfg := zap.NewProductionConfig()
	zcfg.Level = zap.NewAtomicLevelAt(lvl)
	zcfg.Sampling = nil
	logger, err := zcfg.Build()
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: logger: %w", err)
	}
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(logger.Named("etcd"))

	e, err := startEtcd(cfg)
	if err != nil {
		return nil, err
	}
	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd: failed while starting in %s: %w", opts.DataDir, err)
	case <-timer.C:
		e.Close()
		return nil, fmt.Errorf("embedded etcd: not ready after %s (data dir %s)", timeout, opts.DataDir)
	case <-ctx.Done():
		e.Close()
		return nil, fmt.Errorf("embedded etcd: start: %w", ctx.Err())
	}
	s := &Server{etcd: e}
	for _, l := range e.Clients {
		s.clientURLs = append(s.clientURLs, "http://"+l.Addr().String())
	}
	return s, nil
}

// startEtcd turns the panics and opaque errors that etcd gives for a bad
// data directory into one clear error.
func startEtcd(cfg *embed.Config) (e *embed.Etcd, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("embedded etcd: data dir %s is corrupt or unreadable: %v", cfg.Dir, r)
		}
	}()
	e, err = embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: start with data dir %s: %w", cfg.Dir, err)
	}
	return e, nil
}

func parseURL(s string) (url.URL, error) {
	if s == "" {
		s = "http://127.0.0.1:0"
	}
	u, err := url.Parse(s)
	if err != nil {
		return url.URL{}, err
	}
	if u.Scheme != "http" || u.Host == "" {
		return url.URL{}, errors.New("want http://host:port")
	}
	return *u, nil
}

func prepareDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("embedded etcd: create data dir %s: %w", dir, err)
	}
	probe := filepath.Join(dir, ".kite-write-probe")
	if err := os.WriteFile(probe, nil, 0o600); err != nil {
		return fmt.Errorf("embedded etcd: data dir %s is not writable: %w", dir, err)
	}
	return os.Remove(probe)
}

// ClientURLs are the URLs etcd actually listens on for clients.
func (s *Server) ClientURLs() []string { return s.clientURLs }

// Client returns a new etcd client connected to this server. The caller
// closes it.
func (s *Server) Client() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:   s.clientURLs,
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
	})
}

// Err reports a fatal error of the running server.
func (s *Server) Err() <-chan error { return s.etcd.Err() }

// Close stops etcd and waits for it to finish. It is safe to call twice.
func (s *Server) Close() { s.etcd.Close() }
