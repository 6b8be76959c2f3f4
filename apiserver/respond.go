package apiserver

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// gzipThreshold is upstream's: responses smaller than this are not worth
// compressing.
const gzipThreshold = 128 << 10

// writeObject encodes obj in the negotiated form and writes it with code.
// The body is encoded fully before the header is written, so an encoding
// error becomes a proper 500 rather than a truncated 200.
func (s *Server) writeObject(w http.ResponseWriter, r *http.Request, code int, out output, gv schema.GroupVersion, obj runtime.Object) {
	var buf bytes.Buffer
	enc := s.codecs.WithoutConversion().EncoderForVersion(out.info.Serializer, gv)
	if err := enc.Encode(obj, &buf); err != nil {
		s.writeError(w, r, apierrors.NewInternalError(err))
		return
	}
	s.writeBytes(w, r, code, out.mediaType, buf.Bytes())
}

// writeBytes writes an encoded body, gzipped when it is large and the
// client accepts gzip.
func (s *Server) writeBytes(w http.ResponseWriter, r *http.Request, code int, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	if len(body) >= gzipThreshold && acceptsGzip(r) {
		h.Set("Content-Encoding", "gzip")
		h.Add("Vary", "Accept-Encoding")
		w.WriteHeader(code)
		gz := gzip.NewWriter(w)
		gz.Write(body)
		gz.Close()
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

func acceptsGzip(r *http.Request) bool {
	for _, enc := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		if strings.TrimSpace(strings.SplitN(enc, ";", 2)[0]) == "gzip" {
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
