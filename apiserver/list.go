package apiserver

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/bits"
	"net/http"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kite-project/kite/storage/watchcache"
)

// Encodings of list items, cached on each object next to its GET and
// watch encodings. A list item carries no kind or apiVersion (the list
// does), as upstream writes lists, so its bytes differ from the object's.
const (
	listItemJSON     runtime.Identifier = "kite-list-item:json"
	listItemProtobuf runtime.Identifier = "kite-list-item:protobuf"
)

// list serves a list or, with watch=true, a watch. A list in JSON or
// protobuf is written from the items' cached bytes (the watch cache's
// objects keep them, shared with every other list and watch); a Table,
// metadata-only or YAML list is built and encoded per request.
func (s *Server) list(c *call) error {
	opts, err := listOptions(c)
	if err != nil {
		return err
	}
	if opts.Watch {
		return s.watch(c, opts)
	}
	mediaType := c.out.info.MediaType
	// A computed resource (componentstatuses) has no cached encodings.
	if c.out.table != nil || c.out.partial != "" || (mediaType != mediaJSON && mediaType != mediaProtobuf) || c.strategy().Computed != nil {
		obj, err := c.store.List(c.ctx(), c.info.Namespace, opts)
		if err != nil {
			return err
		}
		// Items of typed lists go out without their kind, as upstream's.
		// The typed list's items are its own copies of the cached
		// structs, so this changes nothing the cache holds. Custom
		// resources keep theirs, as upstream's unstructured lists do.
		meta.EachListItem(obj, func(item runtime.Object) error {
			if _, ok := item.(runtime.Unstructured); !ok {
				item.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
			}
			return nil
		})
		return s.result(c, http.StatusOK, obj)
	}
	list, err := c.store.ListCached(c.ctx(), c.info.Namespace, opts)
	if err != nil {
		return err
	}
	return s.writeCachedList(c, list)
}

// writeCachedList writes a list whose items are cached objects, in the
// negotiated form (JSON or protobuf).
func (s *Server) writeCachedList(c *call, list *watchcache.CachedList) error {
	id := listItemJSON
	if c.out.info.MediaType == mediaProtobuf {
		id = listItemProtobuf
	}
	s.writeWarnings(c)
	dw := s.deferred(c.w, c.r, http.StatusOK, c.out.mediaType)
	if err := writeList(dw, id, c.strategy().Kind, list); err != nil && !dw.started {
		return err
	}
	// After the status line an error (the client went away) can only end
	// the body early.
	dw.Close()
	return nil
}

// writeList writes list, whose items are of kind, in the encoding id
// names (listItemJSON or listItemProtobuf): the envelope is made here and
// each item is its cached bytes, encoded now if no list has sent it
// before. The output is byte for byte what upstream's streaming collection
// encoders write for the same list. Nothing is written when an item
// cannot be encoded.
func writeList(w io.Writer, id runtime.Identifier, kind schema.GroupVersionKind, list *watchcache.CachedList) error {
	encode := encodeListItemJSON
	if id == listItemProtobuf {
		encode = encodeListItemProtobuf
	}
	// Every item is encoded before the first byte goes out: an encoding
	// error is still a clean 500, and protobuf needs the sizes up front.
	items := make([][]byte, len(list.Items))
	for i, o := range list.Items {
		raw, err := o.Encoded(id, encode)
		if err != nil {
			return fmt.Errorf("encode list item %s/%s: %w", o.GetNamespace(), o.GetName(), err)
		}
		items[i] = raw
	}
	typeMeta := runtime.TypeMeta{APIVersion: kind.GroupVersion().String(), Kind: kind.Kind + "List"}
	listMeta := metav1.ListMeta{
		ResourceVersion:    strconv.FormatUint(list.ResourceVersion, 10),
		Continue:           list.Continue,
		RemainingItemCount: list.RemainingItemCount,
	}
	if id == listItemProtobuf {
		return writeProtobufList(w, typeMeta, listMeta, items)
	}
	return writeJSONList(w, typeMeta, listMeta, items)
}

// encodeListItemJSON is an item as encoding/json writes it inside a list:
// compact, without kind and apiVersion (but for custom resources, which
// keep theirs and whose cached maps must not change), no trailing newline.
func encodeListItemJSON(obj runtime.Object, w io.Writer) error {
	if _, ok := obj.(runtime.Unstructured); !ok {
		obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// encodeListItemProtobuf is an item's bare protobuf message, as it sits
// in a list's repeated items field.
func encodeListItemProtobuf(obj runtime.Object, w io.Writer) error {
	m, ok := obj.(interface{ Marshal() ([]byte, error) })
	if !ok {
		return fmt.Errorf("%T has no protobuf encoding", obj)
	}
	b, err := m.Marshal()
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// writeJSONList writes {"kind":..,"apiVersion":..,"metadata":{..},"items":[..]}
// and a newline, as apimachinery's streaming JSON list encoder does.
func writeJSONList(w io.Writer, typeMeta runtime.TypeMeta, listMeta metav1.ListMeta, items [][]byte) error {
	head, err := json.Marshal(struct {
		Kind       string          `json:"kind"`
		APIVersion string          `json:"apiVersion"`
		Metadata   metav1.ListMeta `json:"metadata"`
	}{typeMeta.Kind, typeMeta.APIVersion, listMeta})
	if err != nil {
		return err
	}
	// head ends with "}": the items continue the object.
	head = append(head[:len(head)-1], `,"items":[`...)
	if _, err := w.Write(head); err != nil {
		return err
	}
	comma := []byte{','}
	for i, item := range items {
		if i > 0 {
			if _, err := w.Write(comma); err != nil {
				return err
			}
		}
		if _, err := w.Write(item); err != nil {
			return err
		}
	}
	_, err = w.Write([]byte("]}\n"))
	return err
}

// protobufPrefix starts every protobuf body of the Kubernetes API.
var protobufPrefix = []byte{'k', '8', 's', 0}

// writeProtobufList writes the prefix and a runtime.Unknown whose raw
// bytes are the list message: field 1 the ListMeta, field 2 each item, as
// apimachinery's streaming protobuf list encoder does.
func writeProtobufList(w io.Writer, typeMeta runtime.TypeMeta, listMeta metav1.ListMeta, items [][]byte) error {
	metaBytes, err := listMeta.Marshal()
	if err != nil {
		return err
	}
	size := fieldSize(len(metaBytes))
	for _, item := range items {
		size += fieldSize(len(item))
	}
	if _, err := w.Write(protobufPrefix); err != nil {
		return err
	}
	unk := runtime.Unknown{TypeMeta: typeMeta}
	// One header buffer for the whole list: it escapes through w.Write.
	head := make([]byte, 1+binary.MaxVarintLen64)
	_, err = unk.MarshalToWriter(w, size, func(w io.Writer) (int, error) {
		n, err := writeField(w, head, 1, metaBytes)
		if err != nil {
			return n, err
		}
		for _, item := range items {
			m, err := writeField(w, head, 2, item)
			n += m
			if err != nil {
				return n, err
			}
		}
		return n, nil
	})
	return err
}

// fieldSize is the size of a length-delimited protobuf field with a
// one-byte tag.
func fieldSize(n int) int { return 1 + varintSize(uint64(n)) + n }

func varintSize(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// writeField writes a length-delimited protobuf field (wire type 2) with
// a one-byte tag, using head (1+binary.MaxVarintLen64 bytes) for the tag
// and length.
func writeField(w io.Writer, head []byte, field byte, b []byte) (int, error) {
	head[0] = field<<3 | 2
	n := 1 + binary.PutUvarint(head[1:], uint64(len(b)))
	m, err := w.Write(head[:n])
	if err != nil {
		return m, err
	}
	k, err := w.Write(b)
	return m + k, err
}
