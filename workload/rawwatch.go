package workload

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// maxFrame bounds one watch event, as client-go's streaming decoder does.
const maxFrame = 16 << 20

// rawReadBuffer is each raw watch's read buffer: a small pod's event fits
// whole, a larger one is gathered into the stream's own buffer.
const rawReadBuffer = 8 << 10

// rawWatches opens pod watches through the REST client and reads their
// frames itself, decoding of each event only what a watcher needs
// (RawDecode): the same request as client-go's typed watch, without
// decoding every pod in full.
type rawWatches struct {
	rest     rest.Interface // a REST client of the resource's group version
	resource string         // its plural, e.g. "pods"
	protobuf bool           // as rawLister.protobuf
}

var _ watchOpener = rawWatches{}

func (r rawWatches) open(ctx context.Context, lo metav1.ListOptions) (eventStream, error) {
	lo.Watch = true
	// UseProtobufAsDefault as client-go's typed pods client does, so that
	// the Accept header is the one its watch sends: the configured content
	// type (then */*), or protobuf then JSON when none is configured. And
	// no client-side rate limit, which client-go's Watch skips too.
	body, err := r.rest.Get().UseProtobufAsDefaultIfPreferred(r.protobuf).Throttle(nil).Resource(r.resource).
		SpecificallyVersionedParams(&lo, scheme.ParameterCodec, listOptionsVersion).Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("watch %s %q from resourceVersion %s: %w", r.resource, lo.FieldSelector, lo.ResourceVersion, err)
	}
	return newRawStream(body), nil
}

// rawStream reads the events of one watch response body. Reads end when
// the context of the request ends, so next needs no context of its own.
type rawStream struct {
	body io.ReadCloser
	r    *bufio.Reader
	// frame reads the next event's bytes; nil until the first byte of the
	// stream has told the format.
	frame func() ([]byte, error)
	parse func([]byte) (event, error)
	buf   []byte // a protobuf frame, or a JSON line longer than r's buffer
	hdr   [4]byte
}

var _ eventStream = (*rawStream)(nil)

func newRawStream(body io.ReadCloser) *rawStream {
	return &rawStream{body: body, r: bufio.NewReaderSize(body, rawReadBuffer)}
}

func (s *rawStream) stop() { s.body.Close() }

func (s *rawStream) next() (event, error) {
	if s.frame == nil {
		// Stream does not show the response's Content-Type, but the two
		// formats differ in their first byte: a JSON event is an object,
		// and a protobuf frame starts with its length, big-endian, which
		// is below maxFrame (16 MiB), so its first byte is 0.
		first, err := s.r.Peek(1)
		if err != nil {
			return event{}, err
		}
		switch first[0] {
		case '{':
			s.frame, s.parse = s.jsonLine, parseJSONEvent
		case 0:
			s.frame, s.parse = s.protobufFrame, parseProtobufEvent
		default:
			return event{}, fmt.Errorf("%w: the watch stream starts with byte %#x, neither a JSON event nor a protobuf frame", errMalformed, first[0])
		}
	}
	b, err := s.frame()
	if err != nil {
		return event{}, err
	}
	return s.parse(b)
}

// jsonLine reads one JSON event: a line, as the JSON serializer ends each
// object with a newline and escapes any within strings.
func (s *rawStream) jsonLine() ([]byte, error) {
	line, err := s.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		// Longer than the read buffer: gather it in s.buf.
		s.buf = append(s.buf[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) && len(s.buf) <= maxFrame {
			line, err = s.r.ReadSlice('\n')
			s.buf = append(s.buf, line...)
		}
		if len(s.buf) > maxFrame {
			return nil, fmt.Errorf("%w: a JSON event of more than %d bytes", errMalformed, maxFrame)
		}
		line = s.buf
	}
	if errors.Is(err, io.EOF) && len(line) > 0 {
		return nil, fmt.Errorf("%w: a JSON event of %d bytes without its newline: %w", errMalformed, len(line), io.ErrUnexpectedEOF)
	}
	return line, err
}

// protobufFrame reads one protobuf frame: a 4-byte big-endian length, then
// a metav1.WatchEvent message of that length.
func (s *rawStream) protobufFrame() ([]byte, error) {
	if _, err := io.ReadFull(s.r, s.hdr[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: a protobuf frame's length cut short: %w", errMalformed, err)
		}
		return nil, err // io.EOF between frames: the server ended the watch
	}
	n := binary.BigEndian.Uint32(s.hdr[:])
	if n > maxFrame {
		return nil, fmt.Errorf("%w: a protobuf frame of %d bytes, more than %d", errMalformed, n, maxFrame)
	}
	if cap(s.buf) < int(n) {
		s.buf = make([]byte, n)
	}
	s.buf = s.buf[:n]
	if _, err := io.ReadFull(s.r, s.buf); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: a protobuf frame of %d bytes cut short: %w", errMalformed, n, io.ErrUnexpectedEOF)
		}
		return nil, fmt.Errorf("read a protobuf frame of %d bytes: %w", n, err)
	}
	return s.buf, nil
}
