// Package embedded runs an etcd server inside the Kite process.
//
// Kite embeds etcd by default so that one binary, with no set-up, has real
// durable storage. The server listens on 127.0.0.1 unless told otherwise,
// over TLS only, and serves only clients with a certificate of its own CA
// (see tls.go): nothing but the API server may reach it. Ports that are
// not given are picked free by the kernel, and the URLs actually bound are
// reported by Server.ClientURLs; the files a client in another process
// needs, by Server.ClientTLS.
//
// Start owns the data directory while the server runs: it holds an
// exclusive lock on it (a second Kite fails at once with ErrDataDirLocked),
// and it reads etcd's files before etcd does, so that a damaged directory is
// one ErrCorrupt error rather than a panic, an exit from inside etcd, or a
// server that never becomes ready.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Options configures an embedded etcd server.
type Options struct {
	// DataDir holds etcd's WAL and backend (under DataDir/etcd) and the
	// lock file. It is created if missing.
	DataDir string
	// ClientURL and PeerURL are where etcd listens: https://host:port,
	// with a client certificate of etcd's CA required on both. Empty
	// means https://127.0.0.1:0, a free port chosen by the kernel. A
	// plain http:// URL is refused.
	ClientURL string
	PeerURL   string
	// UnsafeNoFsync turns off fsync: for tests only, where losing the
	// data on power failure does not matter.
	UnsafeNoFsync bool
	// StartTimeout bounds how long Start waits for etcd to be ready.
	// Zero means 60 s.
	StartTimeout time.Duration
	// LogLevel is etcd's own log level once it is running ("error" when
	// empty). While Start and Close run, etcd logs nothing: what goes
	// wrong then is in the error they return.
	LogLevel string
	// MaxRequestBytes is the largest request etcd accepts. Zero means
	// 3 MiB + margin so that every object the API server admits fits.
	MaxRequestBytes uint
}

// Server is a running embedded etcd.
type Server struct {
	etcd       *embed.Etcd
	log        *etcdLogger
	lock       *dirLock
	clientURLs []string
	clientTLS  TLSFiles
	errc       chan error
	watchDone  chan struct{}
	closeOnce  sync.Once
}

// ErrDataDirLocked is returned when another process holds the data directory.
var ErrDataDirLocked = errors.New("embedded etcd: data directory is in use by another process")

// catchUpEntries is how many applied raft entries the member keeps in
// memory (etcd's --snapshot-catchup-entries).
const catchUpEntries = 100

// electionTickMs and electionTicks are the raft tick of the member and
// its election timeout in ticks (see Start).
const (
	electionTickMs = 5
	electionTicks  = 5
)

// closeTimeout bounds how long a failed start waits for etcd to release
// what it opened; a half-started etcd can block in Close forever.
const closeTimeout = 5 * time.Second

// Start starts etcd and waits until it serves requests. The context bounds
// only the start; the server runs until Close.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.DataDir == "" {
		return nil, errors.New("embedded etcd: no data directory given")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("embedded etcd: start: %w", err)
	}
	clientURL, err := parseURL(opts.ClientURL)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: client URL %q: %w", opts.ClientURL, err)
	}
	peerURL, err := parseURL(opts.PeerURL)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: peer URL %q: %w", opts.PeerURL, err)
	}
	log, err := newEtcdLogger(opts.LogLevel)
	if err != nil {
		return nil, err
	}
	if err := prepareDataDir(opts.DataDir); err != nil {
		return nil, err
	}
	lock, err := lockDataDir(opts.DataDir)
	if err != nil {
		return nil, err
	}
	serverTLS, clientTLS, err := ensureCerts(opts.DataDir, certHosts(clientURL, peerURL))
	if err != nil {
		lock.unlock()
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = "kite"
	cfg.Dir = filepath.Join(opts.DataDir, "etcd")
	// One member has no peers to hear from, so short raft ticks cost
	// nothing in stability, and they decide how long it takes to elect
	// itself at start: etcd fast-forwards a single member's election
	// clock to one tick short of the election timeout, and raft then
	// waits a random 1 to ElectionMs/TickMs more ticks. 5 ticks (etcd's
	// least) of 5 ms elect it 5-25 ms after it starts; 10 ms / 100 ms took
	// 10-100 ms, most of the spread of a whole Kite start, and the
	// 100 ms / 1 s defaults 0.1-1 s.
	cfg.TickMs = electionTickMs
	cfg.ElectionMs = electionTicks * electionTickMs
	if err := checkMember(filepath.Join(cfg.Dir, "member")); err != nil {
		lock.unlock()
		return nil, err
	}
	// etcd keeps the last 5 000 raft entries in memory for slow followers
	// to catch up from; one member has no followers, and 5 000 pod writes
	// are ~8 MB of heap held for nothing.
	cfg.SnapshotCatchUpEntries = catchUpEntries
	cfg.UnsafeNoFsync = opts.UnsafeNoFsync
	cfg.MaxRequestBytes = opts.MaxRequestBytes
	if cfg.MaxRequestBytes == 0 {
		cfg.MaxRequestBytes = 4 * 1024 * 1024
	}
	cfg.ClientTLSInfo = serverTLS
	cfg.PeerTLSInfo = serverTLS
	// The JSON gateway dials etcd's own gRPC server with the serving
	// certificate as a client one; nothing of Kite's speaks JSON to etcd.
	cfg.EnableGRPCGateway = false
	cfg.ListenClientUrls = []url.URL{clientURL}
	if u, ok := httpOnlyURL(opts.DataDir); ok {
		cfg.ListenClientHttpUrls = []url.URL{u}
	}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(log.logger)

	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	e, err := startEtcd(ctx, cfg, log, timeout)
	if err != nil {
		lock.unlock()
		return nil, fmt.Errorf("embedded etcd: start in %s: %w", opts.DataDir, err)
	}
	log.loud()
	s := &Server{etcd: e, log: log, lock: lock, clientTLS: clientTLS, errc: make(chan error, 1), watchDone: make(chan struct{})}
	for _, l := range e.Clients {
		if l.Addr().Network() == "tcp" { // not httpOnlyURL's socket
			s.clientURLs = append(s.clientURLs, "https://"+l.Addr().String())
		}
	}
	go s.watchErrors()
	return s, nil
}

// httpOnlyURL is where etcd serves its HTTP endpoints (/health,
// /metrics, /version), apart from the client URL: a TLS unix socket in
// the data directory, which only this user can reach. With them apart,
// the client URL serves gRPC alone on gRPC's own HTTP/2 transport, rather
// than through net/http's server and grpc-go's ServeHTTP (which its
// authors call much slower): every read, write and watch of the API server
// costs etcd less CPU (etcd's own advice: --listen-client-http-urls). ok
// is false when the path is too long for a socket (about 100 bytes); then
// both share the client URL, as before.
func httpOnlyURL(dataDir string) (url.URL, bool) {
	path, err := filepath.Abs(filepath.Join(dataDir, "etcd-http.sock"))
	if err != nil || len(path) > maxSocketPath {
		return url.URL{}, false
	}
	return url.URL{Scheme: "unixs", Path: path}, true
}

// maxSocketPath is the longest unix socket path that binds everywhere
// (sun_path is 104 bytes on BSDs and macOS, 108 on Linux, with the NUL).
const maxSocketPath = 100

// startResult is what embed.StartEtcd returned.
type startResult struct {
	e   *embed.Etcd
	err error
}

// startEtcd runs embed.StartEtcd on its own goroutine, so that a Fatal
// inside it (which our logger turns into runtime.Goexit) or a panic ends
// only that goroutine, and waits for the server to be ready.
func startEtcd(ctx context.Context, cfg *embed.Config, log *etcdLogger, timeout time.Duration) (*embed.Etcd, error) {
	started := make(chan startResult, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				started <- startResult{err: fmt.Errorf("%w: %v", ErrCorrupt, r)}
			}
		}()
		e, err := embed.StartEtcd(cfg)
		started <- startResult{e, err}
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var e *embed.Etcd
	select {
	case r := <-started:
		if r.err != nil {
			return nil, r.err
		}
		e = r.e
	case err := <-log.fatal:
		// etcd gave up inside StartEtcd; its goroutine has ended, and
		// whatever it had opened stays open until the process exits.
		return nil, err
	case <-timer.C:
		go closeWhenStarted(started, log)
		return nil, fmt.Errorf("etcd did not start within %s", timeout)
	case <-ctx.Done():
		go closeWhenStarted(started, log)
		return nil, ctx.Err()
	}
	var err error
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err = <-e.Err():
	case err = <-log.fatal:
	case <-timer.C:
		err = fmt.Errorf("etcd not ready within %s", timeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	closeBounded(e, log)
	return nil, err
}

// closeWhenStarted closes an etcd whose start was given up on, once
// StartEtcd returns (or etcd gives up by itself).
func closeWhenStarted(started <-chan startResult, log *etcdLogger) {
	select {
	case r := <-started:
		if r.e != nil {
			closeBounded(r.e, log)
		}
	case <-log.fatal:
	}
}

// closeBounded closes etcd quietly and waits at most closeTimeout.
func closeBounded(e *embed.Etcd, log *etcdLogger) {
	log.quiet()
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Close()
	}()
	select {
	case <-done:
	case <-time.After(closeTimeout):
	}
}

// watchErrors forwards the first fatal error of the running server: one
// etcd reports on its error channel, or a Fatal it logged.
func (s *Server) watchErrors() {
	defer close(s.watchDone)
	var err error
	select {
	case err = <-s.etcd.Err():
	case err = <-s.log.fatal:
	case <-s.etcd.Server.StopNotify():
		return
	}
	if err != nil {
		s.errc <- fmt.Errorf("embedded etcd: %w", err)
	}
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

// ClientTLS are the files of a client certificate that this server
// accepts, and of the CA that signed its serving certificate.
func (s *Server) ClientTLS() TLSFiles { return s.clientTLS }

// Client returns a new etcd client connected to this server with the
// client certificate of ClientTLS. The caller closes it.
func (s *Server) Client() (*clientv3.Client, error) {
	tlsConfig, err := s.clientTLS.ClientConfig()
	if err != nil {
		return nil, err
	}
	return clientv3.New(clientv3.Config{
		Endpoints:   s.clientURLs,
		DialTimeout: 10 * time.Second,
		TLS:         tlsConfig,
		Logger:      zap.NewNop(),
	})
}

// Err reports a fatal error of the running server. It is never closed.
func (s *Server) Err() <-chan error { return s.errc }

// Close stops etcd, waits for it to finish and releases the data
// directory. It is safe to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		// etcd logs errors about its own listeners closing; on a
		// shutdown we asked for, they are noise.
		s.log.quiet()
		s.etcd.Close()
		<-s.watchDone
		s.lock.unlock()
	})
}
