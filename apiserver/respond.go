package apiserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/apiserver/pargzip"
)

// gzipThreshold is upstream's: responses smaller than this are not worth
// compressing.
const gzipThreshold = 128 << 10

// writeObject encodes obj in the negotiated form and writes it with code.
// Lists are encoded item by item (the codec factory streams collections)
// into a deferred writer: a body that stays under 128 KiB is sent whole
// with its Content-Length, and an encoding error then still becomes a 500;
// a larger one is streamed, gzipped when the client accepts gzip, so a
// list of many objects is never held in memory twice.
func (s *Server) writeObject(w http.ResponseWriter, r *http.Request, code int, out output, gv schema.GroupVersion, obj runtime.Object) {
	enc := s.encoderFor(out.info.Serializer, gv)
	dw := s.deferred(w, r, code, out.mediaType)
	if err := enc.Encode(obj, dw); err != nil {
		if !dw.started {
			s.writeError(w, r, apierrors.NewInternalError(err))
			return
		}
		// The status line is gone; ending the body early is all that is left.
		klog.V(2).InfoS("Encoding a response failed after it started", "path", r.URL.Path, "err", err)
	}
	dw.Close()
}

// writeBytes writes an encoded body.
func (s *Server) writeBytes(w http.ResponseWriter, r *http.Request, code int, contentType string, body []byte) {
	dw := s.deferred(w, r, code, contentType)
	dw.Write(body)
	dw.Close()
}

// deferred returns the writer of one response body.
func (s *Server) deferred(w http.ResponseWriter, r *http.Request, code int, contentType string) *deferredWriter {
	return &deferredWriter{w: w, r: r, code: code, contentType: contentType, gzips: &s.gzips}
}

// deferredWriter holds the first gzipThreshold bytes of a response: if
// the body ends there it goes out in one piece, otherwise it is streamed
// (gzipped if the client accepts gzip), as upstream's
// deferredResponseWriter does.
type deferredWriter struct {
	w           http.ResponseWriter
	r           *http.Request
	code        int
	contentType string
	buf         bytes.Buffer
	started     bool
	out         io.Writer
	gz          *pargzip.Writer
	gzips       *pargzip.Pool
	bw          *bufio.Writer // large bodies only
}

func (d *deferredWriter) Write(p []byte) (int, error) {
	if d.started {
		return d.out.Write(p)
	}
	if d.buf.Len()+len(p) < gzipThreshold {
		return d.buf.Write(p)
	}
	d.start(true)
	if _, err := d.out.Write(d.buf.Bytes()); err != nil {
		return 0, err
	}
	d.buf.Reset()
	return d.out.Write(p)
}

func (d *deferredWriter) start(large bool) {
	d.started = true
	h := d.w.Header()
	h.Set("Content-Type", d.contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	d.out = d.w
	if large {
		// Large bodies (lists) arrive in many small writes, an item or a
		// compressor block each; HTTP/2 hands each 4 KiB of them to the
		// connection's goroutine. Gathering them in 64 KiB pieces costs
		// a sixteenth of those hand-offs.
		d.bw = bufio.NewWriterSize(d.w, largeWriteSize)
		d.out = d.bw
	}
	switch {
	case large && acceptsGzip(d.r):
		h.Set("Content-Encoding", "gzip")
		h.Add("Vary", "Accept-Encoding")
		// Level 1, as upstream's (kubernetes/kubernetes#112296), spread
		// over the cores.
		d.gz = pargzip.NewWriter(d.bw, d.gzips, 0)
		d.out = d.gz
	case !large:
		h.Set("Content-Length", strconv.Itoa(d.buf.Len()))
	}
	d.w.WriteHeader(d.code)
}

// largeWriteSize is the size of the writes of a large body to the
// connection.
const largeWriteSize = 64 << 10

// Close sends a small body, or finishes a streamed one.
func (d *deferredWriter) Close() {
	if !d.started {
		d.start(false)
		if d.r.Method != http.MethodHead {
			d.w.Write(d.buf.Bytes())
		}
		return
	}
	if d.gz != nil {
		d.gz.Close()
	}
	d.bw.Flush()
}

// acceptsGzip reports whether the client accepts gzip by upstream's rule
// (responsewriters.ContentEncodingSupported): one of the comma-separated
// Accept-Encoding tokens is exactly "gzip"; "gzip;q=0.5" is not.
func acceptsGzip(r *http.Request) bool {
	for _, enc := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		if strings.TrimSpace(enc) == "gzip" {
			return true
		}
	}
	return false
}

// writeJSON writes a fixed object (version, health) as JSON.
func (s *Server) writeJSON(w http.ResponseWriter, code int, v any) {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", mediaJSON)
	w.WriteHeader(code)
	w.Write(body)
}

// writeError writes err as a metav1.Status in the form the client accepts
// (JSON when it accepts nothing we speak). Errors without a status are 500.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status := toStatus(err)
	if status.Code >= 500 {
		klog.V(2).InfoS("Request failed", "method", r.Method, "path", r.URL.Path, "code", status.Code, "err", err)
	}
	if status.Details != nil && status.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(status.Details.RetryAfterSeconds)))
	}
	out, nerr := s.negotiate(r, negotiation{})
	if nerr != nil {
		out = s.plain(mediaJSON)
	}
	s.writeObject(w, r, int(status.Code), out, schema.GroupVersion{Version: "v1"}, status)
}

// toStatus returns the API status of err, 500 InternalError for errors
// that carry none.
func toStatus(err error) *metav1.Status {
	var api apierrors.APIStatus
	if errors.As(err, &api) {
		st := api.Status()
		if st.Code == 0 {
			st.Code = http.StatusInternalServerError
		}
		if st.Status == "" {
			st.Status = metav1.StatusFailure
		}
		return &st
	}
	st := apierrors.NewInternalError(err).Status()
	return &st
}
