package apiserver

import (
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/munnerz/goautoneg"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Media types the API speaks, in upstream's order.
const (
	mediaJSON     = "application/json"
	mediaYAML     = "application/yaml"
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
)

// output is the negotiated form of a response.
type output struct {
	// info encodes the response; mediaType is its Content-Type.
	info      runtime.SerializerInfo
	mediaType string
	// table is set when the client asked for a Table (kubectl get).
	table *schema.GroupVersion
	// discovery is set when the client asked for aggregated discovery.
	discovery bool
	// partial is set when the client asked for metadata only
	// (PartialObjectMetadata or PartialObjectMetadataList, meta.k8s.io/v1).
	partial string
}

// negotiation says which special forms a response may take.
type negotiation struct {
	table     bool
	discovery bool
	// partial is the metadata-only kind this endpoint can return:
	// PartialObjectMetadata (get, watch) or PartialObjectMetadataList (list).
	partial string
	// noProtobuf says the objects have no protobuf form (custom
	// resources): protobuf is offered for Tables and metadata only, as
	// upstream.
	noProtobuf bool
}

// negotiate picks the response form from the Accept header, in the
// client's order of preference. Entries asking for a form this endpoint
// does not offer are skipped; if none is left the answer is 406.
func (s *Server) negotiate(r *http.Request, allow negotiation) (output, error) {
	header := r.Header.Get("Accept")
	if strings.TrimSpace(header) == "" {
		return s.plain(mediaJSON), nil
	}
	for _, clause := range goautoneg.ParseAccept(header) {
		if clause.Q == 0 {
			continue
		}
		mediaType := clause.Type + "/" + clause.SubType
		if mediaType == "*/*" || mediaType == "application/*" {
			mediaType = mediaJSON
		}
		info, ok := s.serializerFor(mediaType)
		if !ok {
			continue
		}
		out := output{info: info, mediaType: info.MediaType}
		switch as := clause.Params["as"]; as {
		case "":
			if allow.noProtobuf && mediaType == mediaProtobuf {
				continue
			}
			return out, nil
		case "Table":
			v := clause.Params["v"]
			if !allow.table || s.opts.Tables == nil || clause.Params["g"] != metav1.GroupName || (v != "v1" && v != "v1beta1") {
				continue
			}
			out.table = &schema.GroupVersion{Group: metav1.GroupName, Version: v}
			return out, nil
		case "PartialObjectMetadata", "PartialObjectMetadataList":
			if as != allow.partial || clause.Params["g"] != metav1.GroupName || clause.Params["v"] != "v1" {
				continue
			}
			out.partial = as
			return out, nil
		case "APIGroupDiscoveryList":
			if !allow.discovery || clause.Params["g"] != "apidiscovery.k8s.io" || clause.Params["v"] != "v2" {
				continue
			}
			out.discovery = true
			out.mediaType = info.MediaType + ";g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
			return out, nil
		}
	}
	if allow.noProtobuf {
		return output{}, notAcceptable([]string{mediaJSON, mediaYAML})
	}
	return output{}, notAcceptable(s.mediaTypes())
}

func (s *Server) plain(mediaType string) output {
	info, _ := s.serializerFor(mediaType)
	return output{info: info, mediaType: info.MediaType}
}

func (s *Server) serializerFor(mediaType string) (runtime.SerializerInfo, bool) {
	for _, info := range s.codecs.SupportedMediaTypes() {
		if info.MediaType == mediaType {
			return info, true
		}
	}
	return runtime.SerializerInfo{}, false
}

func (s *Server) mediaTypes() []string {
	var types []string
	for _, info := range s.codecs.SupportedMediaTypes() {
		switch info.MediaType {
		case mediaJSON, mediaYAML, mediaProtobuf:
			types = append(types, info.MediaType)
		}
	}
	return types
}

// bodySerializer returns the serializer for a request body's
// Content-Type; an unknown type is 415.
func (s *Server) bodySerializer(r *http.Request) (runtime.SerializerInfo, error) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		ct = mediaJSON
	}
	mediaType, _, err := mime.ParseMediaType(ct)
	if err == nil {
		if info, ok := s.serializerFor(mediaType); ok {
			return info, nil
		}
	}
	return runtime.SerializerInfo{}, unsupportedMediaType(ct, s.mediaTypes())
}

func notAcceptable(accepted []string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotAcceptable,
		Reason:  metav1.StatusReasonNotAcceptable,
		Message: fmt.Sprintf("only the following media types are accepted: %s", strings.Join(accepted, ", ")),
	}}
}

func unsupportedMediaType(contentType string, accepted []string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnsupportedMediaType,
		Reason:  metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s", strings.Join(accepted, ", ")),
	}}
}
