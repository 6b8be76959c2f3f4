package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// errMalformed is wrapped by every error about a watch event or list
// body that cannot be read.
var errMalformed = errors.New("malformed response")

// parseJSONEvent reads one JSON watch event ({"type":...,"object":{...}})
// down to what a watcher needs. A server writes the type first and the
// pod's metadata before its spec, so the walk stops after the metadata and
// never looks at the rest; other orders work too, only slower. An ERROR
// event comes back as the error of its Status.
func parseJSONEvent(b []byte) (event, error) {
	var ev event
	var object []byte // the object, when it came before the type
	parsed := false
	s := &jsonScan{b: b}
	err := s.object(func(key []byte, escaped bool) (bool, error) {
		switch {
		case keyIs(key, escaped, "type"):
			t, err := s.stringValue()
			ev.typ = watch.EventType(t)
			return false, err
		case keyIs(key, escaped, "object") && ev.typ != "" && ev.typ != watch.Error:
			parsed = true
			return true, podJSON(s, &ev)
		case keyIs(key, escaped, "object"):
			s.space()
			start := s.i
			err := s.skip()
			object = b[start:s.i]
			return false, err
		}
		return false, s.skip()
	})
	switch {
	case err != nil:
		return event{}, err
	case ev.typ == "":
		return event{}, fmt.Errorf("%w: JSON event without a type", errMalformed)
	case parsed:
		return ev, nil
	case object == nil:
		return event{}, fmt.Errorf("%w: JSON %s event without an object", errMalformed, ev.typ)
	case ev.typ == watch.Error:
		var status metav1.Status
		if err := json.Unmarshal(object, &status); err != nil {
			return event{}, fmt.Errorf("%w: JSON ERROR event's Status: %w", errMalformed, err)
		}
		return event{}, fmt.Errorf("watch ERROR event: %w", apierrors.FromObject(&status))
	}
	return ev, podJSON(&jsonScan{b: object}, &ev)
}

// podJSON reads the namespace, resourceVersion and sent annotation of the
// pod next in s into ev, and stops after its metadata.
func podJSON(s *jsonScan, ev *event) error {
	found := false
	err := s.object(func(key []byte, escaped bool) (bool, error) {
		if !keyIs(key, escaped, "metadata") {
			return false, s.skip()
		}
		found = true
		return true, metaJSON(s, ev)
	})
	if err == nil && !found {
		err = fmt.Errorf("%w: JSON %s event: object without metadata", errMalformed, ev.typ)
	}
	return err
}

// metaJSON reads the fields of ObjectMeta a watcher needs into ev, and
// stops once it has all three (encoding/json writes namespace,
// resourceVersion, then labels and annotations, and managedFields last).
func metaJSON(s *jsonScan, ev *event) error {
	var namespace, rv, annotations bool
	return s.object(func(key []byte, escaped bool) (bool, error) {
		var err error
		switch {
		case keyIs(key, escaped, "namespace"):
			ev.namespace, err = s.stringValue()
			namespace = true
		case keyIs(key, escaped, "resourceVersion"):
			ev.rv, err = s.stringValue()
			rv = true
		case keyIs(key, escaped, "annotations"):
			annotations = true
			if s.null() {
				break
			}
			err = s.object(func(key []byte, escaped bool) (bool, error) {
				if !keyIs(key, escaped, sentAnnotation) {
					return false, s.skip()
				}
				var err error
				ev.sent, err = s.stringValue()
				return false, err
			})
		default:
			err = s.skip()
		}
		return namespace && rv && annotations, err
	})
}

// protobufMagic starts every object that Kubernetes' protobuf serializer
// writes: "k8s" and a zero byte, then a runtime.Unknown.
var protobufMagic = []byte("k8s\x00")

// Field numbers of the messages parseProtobufEvent walks, from their
// generated.proto files.
const (
	watchEventType   = 1 // metav1.WatchEvent.type
	watchEventObject = 2 // metav1.WatchEvent.object, a runtime.RawExtension
	rawExtensionRaw  = 1 // runtime.RawExtension.raw
	unknownRaw       = 2 // runtime.Unknown.raw
	podMetadata      = 1 // v1.Pod.metadata
	metaNamespace    = 3 // metav1.ObjectMeta.namespace
	metaRV           = 6 // metav1.ObjectMeta.resourceVersion
	metaAnnotations  = 12
	mapKey, mapValue = 1, 2 // a map entry's fields
)

// parseProtobufEvent reads one protobuf watch event (a metav1.WatchEvent
// message, as a frame holds it) down to what a watcher needs: it walks the
// wire format to the pod's ObjectMeta and reads three of its fields. An
// ERROR event comes back as the error of its Status.
func parseProtobufEvent(b []byte) (event, error) {
	var ev event
	var raw []byte // RawExtension.raw
	hasRaw := false
	err := protoFields(b, func(num protowire.Number, v []byte) error {
		switch num {
		case watchEventType:
			ev.typ = watch.EventType(v)
		case watchEventObject:
			return protoFields(v, func(num protowire.Number, v []byte) error {
				if num == rawExtensionRaw {
					raw, hasRaw = v, true
				}
				return nil
			})
		}
		return nil
	})
	switch {
	case err != nil:
		return event{}, fmt.Errorf("protobuf event: %w", err)
	case ev.typ == "":
		return event{}, fmt.Errorf("%w: protobuf event without a type", errMalformed)
	case !hasRaw:
		return event{}, fmt.Errorf("%w: protobuf %s event without an object", errMalformed, ev.typ)
	case !bytes.HasPrefix(raw, protobufMagic):
		return event{}, fmt.Errorf("%w: protobuf %s event: object does not start with %q", errMalformed, ev.typ, protobufMagic)
	}
	var object []byte // Unknown.raw: the Pod or Status message
	err = protoFields(raw[len(protobufMagic):], func(num protowire.Number, v []byte) error {
		if num == unknownRaw {
			object = v
		}
		return nil
	})
	if err != nil {
		return event{}, fmt.Errorf("protobuf %s event's object: %w", ev.typ, err)
	}
	if ev.typ == watch.Error {
		var status metav1.Status
		if err := status.Unmarshal(object); err != nil {
			return event{}, fmt.Errorf("%w: protobuf ERROR event's Status: %w", errMalformed, err)
		}
		return event{}, fmt.Errorf("watch ERROR event: %w", apierrors.FromObject(&status))
	}
	found := false
	err = protoFields(object, func(num protowire.Number, v []byte) error {
		if num != podMetadata {
			return nil
		}
		found = true
		return protoFields(v, func(num protowire.Number, v []byte) error {
			switch num {
			case metaNamespace:
				ev.namespace = string(v)
			case metaRV:
				ev.rv = string(v)
			case metaAnnotations:
				var key, value []byte
				err := protoFields(v, func(num protowire.Number, v []byte) error {
					switch num {
					case mapKey:
						key = v
					case mapValue:
						value = v
					}
					return nil
				})
				if err == nil && string(key) == sentAnnotation {
					ev.sent = string(value)
				}
				return err
			}
			return nil
		})
	})
	if err != nil {
		return event{}, fmt.Errorf("protobuf %s event's pod: %w", ev.typ, err)
	}
	if !found {
		return event{}, fmt.Errorf("%w: protobuf %s event: object without metadata", errMalformed, ev.typ)
	}
	return ev, nil
}

// protoFields calls f with the number and contents of each length-delimited
// field of the message b, in order, and skips fields of other wire types.
func protoFields(b []byte, f func(num protowire.Number, v []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: field tag: %w", errMalformed, protowire.ParseError(n))
		}
		b = b[n:]
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return fmt.Errorf("%w: field %d: %w", errMalformed, num, protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return fmt.Errorf("%w: field %d: %w", errMalformed, num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := f(num, v); err != nil {
			return err
		}
	}
	return nil
}
