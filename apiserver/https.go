package apiserver

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"k8s.io/klog/v2"
)

// HTTPSOptions say how NewHTTPSServer serves a handler.
type HTTPSOptions struct {
	// TLSConfig is the serving configuration; the server takes a clone.
	TLSConfig *tls.Config
	// ReadHeaderTimeout bounds the TLS handshake and the reading of a
	// request's headers. Required.
	ReadHeaderTimeout time.Duration
	// WriteTimeout closes a connection whose writes make no progress for
	// that long; 0 means DefaultWriteTimeout.
	WriteTimeout time.Duration
	// MaxStreamsPerConnection limits a client connection's concurrent
	// HTTP/2 streams. Required.
	MaxStreamsPerConnection int
	// Context is every request's base context: requests end with it.
	Context context.Context
	// Logger takes the net/http server's errors.
	Logger klog.Logger
}

// NewHTTPSServer is the net/http server of the API, configured as
// kube-apiserver's secure serving: h served on connections that
// ServeTLS(listener, "", "") takes.
func NewHTTPSServer(h http.Handler, opts HTTPSOptions) *http.Server {
	writeTimeout := opts.WriteTimeout
	if writeTimeout <= 0 {
		writeTimeout = DefaultWriteTimeout
	}
	// No ReadTimeout or WriteTimeout: they would bound whole requests,
	// watches included. Bodies are read within the request timeout and
	// responses bounded write by write (Options.WriteTimeout).
	return &http.Server{
		Handler:           h,
		TLSConfig:         opts.TLSConfig.Clone(),
		ReadHeaderTimeout: opts.ReadHeaderTimeout, // also bounds the TLS handshake
		MaxHeaderBytes:    1 << 20,
		BaseContext:       func(net.Listener) context.Context { return opts.Context },
		ErrorLog:          serverErrorLog(opts.Logger),
		IdleTimeout:       90 * time.Second, // http.DefaultTransport's keep-alive
		HTTP2:             http2Config(opts.MaxStreamsPerConnection, writeTimeout),
	}
}

// http2Config is kube-apiserver's HTTP/2 configuration (k8s.io/apiserver
// secure serving): 100 streams per connection unless told otherwise (a
// client then opens another connection, which also spreads a watcher-heavy
// client's streams over several connection goroutines), and 256 KiB
// frames and per-stream buffers, enough for most request bodies in one
// frame. A connection whose writes make no progress for writeTimeout is
// closed: its client has stopped reading, and its streams end with it.
func http2Config(maxStreams int, writeTimeout time.Duration) *http.HTTP2Config {
	const resourceBody99Percentile = 256 << 10
	return &http.HTTP2Config{
		MaxConcurrentStreams:          maxStreams,
		MaxReadFrameSize:              resourceBody99Percentile,
		MaxReceiveBufferPerStream:     resourceBody99Percentile,
		MaxReceiveBufferPerConnection: resourceBody99Percentile * maxStreams,
		WriteByteTimeout:              writeTimeout,
	}
}

// Profiles serves Go's runtime profiles, as kube-apiserver's
// /debug/pprof/ does.
func Profiles() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
