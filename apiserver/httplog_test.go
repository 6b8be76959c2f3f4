package apiserver

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/klog/v2/textlogger"
)

func TestServerErrorLogDropsTLSHandshakeNoise(t *testing.T) {
	var out bytes.Buffer
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&out)))
	l := serverErrorLog(logger)
	l.Print("http: TLS handshake error from 127.0.0.1:51234: EOF")
	if out.Len() != 0 {
		t.Fatalf("handshake noise logged: %q", out.String())
	}
	l.Print("http: panic serving 127.0.0.1:51234: boom")
	if !strings.Contains(out.String(), "panic serving") {
		t.Fatalf("other server errors must be logged, got %q", out.String())
	}
}
