package apiserver

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kite-project/kite/storage/watchcache"
)

// cachedFrames makes watch frames of watch-cache objects from the bytes
// the objects keep for lists: a watch event's object is a list item plus
// its kind and apiVersion, which the frame adds around the item's bytes.
// So one encoding per wire format serves every list and every watcher of
// an object, and nothing is encoded per event or per watcher.
//
// The frames are byte for byte what the streaming encoder writes for a
// metav1.WatchEvent whose object the versioning encoder wrote (tested).
type cachedFrames struct {
	protobuf bool
	// jsonKind is `{"kind":"Pod","apiVersion":"v1"`: the start of an
	// object's JSON, as encoding/json writes the inline TypeMeta first.
	jsonKind []byte
	// typeMeta is the marshalled runtime.TypeMeta of the protobuf
	// envelope (runtime.Unknown).
	typeMeta []byte
}

func newCachedFrames(protobuf bool, kind schema.GroupVersionKind) (*cachedFrames, error) {
	tm := runtime.TypeMeta{APIVersion: kind.GroupVersion().String(), Kind: kind.Kind}
	typeMeta, err := tm.Marshal()
	if err != nil {
		return nil, fmt.Errorf("marshal the type of %v: %w", kind, err)
	}
	jsonKind := fmt.Appendf(nil, `{"kind":%q,"apiVersion":%q`, tm.Kind, tm.APIVersion)
	return &cachedFrames{protobuf: protobuf, jsonKind: jsonKind, typeMeta: typeMeta}, nil
}

// appendEvent appends the frame of an event of type typ (ADDED, MODIFIED
// or DELETED) for obj to buf and returns the size of the object in it.
func (f *cachedFrames) appendEvent(buf *bytes.Buffer, typ watch.EventType, obj *watchcache.CachedObject) (int, error) {
	if f.protobuf {
		item, err := obj.Encoded(listItemProtobuf, encodeListItemProtobuf)
		if err != nil {
			return 0, err
		}
		return f.appendProtobuf(buf, typ, item), nil
	}
	item, err := obj.Encoded(listItemJSON, encodeListItemJSON)
	if err != nil {
		return 0, err
	}
	if len(item) < 2 || item[0] != '{' {
		return 0, fmt.Errorf("list item JSON of %s/%s is not an object", obj.GetNamespace(), obj.GetName())
	}
	buf.WriteString(jsonEventPrefix(typ))
	start := buf.Len()
	buf.Write(f.jsonKind)
	if len(item) > 2 {
		buf.WriteByte(',')
	}
	buf.Write(item[1:])
	size := buf.Len() - start
	buf.WriteString("}\n")
	return size, nil
}

// appendProtobuf appends a length-delimited metav1.WatchEvent: field 1 the
// type, field 2 a RawExtension whose raw bytes are "k8s\x00" and a
// runtime.Unknown (field 1 the TypeMeta, 2 the item, 3 and 4 the empty
// content encoding and type, as the protobuf serializer writes them).
func (f *cachedFrames) appendProtobuf(buf *bytes.Buffer, typ watch.EventType, item []byte) int {
	unknown := fieldSize(len(f.typeMeta)) + fieldSize(len(item)) + 2 + 2
	raw := len(protobufPrefix) + unknown
	rawExtension := fieldSize(raw)
	event := fieldSize(len(typ)) + fieldSize(rawExtension)

	var head [4]byte
	binary.BigEndian.PutUint32(head[:], uint32(event))
	buf.Write(head[:])
	appendTag(buf, 1, len(typ))
	buf.WriteString(string(typ))
	appendTag(buf, 2, rawExtension)
	appendTag(buf, 1, raw)
	start := buf.Len()
	buf.Write(protobufPrefix)
	appendTag(buf, 1, len(f.typeMeta))
	buf.Write(f.typeMeta)
	appendTag(buf, 2, len(item))
	buf.Write(item)
	buf.Write([]byte{3<<3 | 2, 0, 4<<3 | 2, 0})
	return buf.Len() - start
}

// appendTag appends the tag of length-delimited field and its length.
func appendTag(buf *bytes.Buffer, field byte, n int) {
	var b [1 + binary.MaxVarintLen64]byte
	b[0] = field<<3 | 2
	k := 1 + binary.PutUvarint(b[1:], uint64(n))
	buf.Write(b[:k])
}
