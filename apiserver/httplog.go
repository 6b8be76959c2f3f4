package apiserver

import (
	"bytes"
	"log"

	"k8s.io/klog/v2"
)

// serverErrorLog is the net/http server's error log. A client that hangs up
// during the TLS handshake (a probe, a test harness, kubectl interrupted)
// makes net/http log "http: TLS handshake error", which says nothing about
// the server: upstream's apiserver drops those lines too. Everything else
// goes to the server's logger.
func serverErrorLog(logger klog.Logger) *log.Logger {
	return log.New(serverErrorWriter{logger}, "", 0)
}

type serverErrorWriter struct{ logger klog.Logger }

func (w serverErrorWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("http: TLS handshake error")) {
		w.logger.V(4).Info("TLS handshake failed", "detail", string(bytes.TrimSpace(p)))
		return len(p), nil
	}
	w.logger.Error(nil, "HTTP server", "detail", string(bytes.TrimSpace(p)))
	return len(p), nil
}
