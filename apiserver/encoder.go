package apiserver

import (
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// encoderFor returns the encoder of responses and watch events in group
// version gv: it writes apiVersion and kind without converting.
//
// Objects of the watch cache are runtime.CacheableObjects. The plain
// serializers encode those from their cached bytes but would not set the
// kind (bookmarks, for one, are made without it, and client-go cannot
// decode an event object that lacks it), so this encoder asks a cacheable
// object for its bytes under its own identity and encodes, once per
// object, a copy with the kind set, as upstream's versioning codec does.
func (s *Server) encoderFor(serializer runtime.Encoder, gv schema.GroupVersion) runtime.Encoder {
	return versionedEncoder{
		Encoder: s.codecs.WithoutConversion().EncoderForVersion(serializer, gv),
		id:      runtime.Identifier("kite-versioned:" + string(serializer.Identifier()) + ":" + gv.String()),
	}
}

type versionedEncoder struct {
	runtime.Encoder
	id runtime.Identifier
}

func (e versionedEncoder) Encode(obj runtime.Object, w io.Writer) error {
	if co, ok := obj.(runtime.CacheableObject); ok {
		// GetObject (what CacheEncode hands to the encode func) is a copy
		// the encoder may set the kind on.
		return co.CacheEncode(e.id, e.Encoder.Encode, w)
	}
	return e.Encoder.Encode(obj, w)
}

func (e versionedEncoder) Identifier() runtime.Identifier { return e.id }
