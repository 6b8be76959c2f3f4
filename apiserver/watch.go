package apiserver

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	goruntime "runtime"
	"time"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kite-project/kite/storage/watchcache"
)

// watch streams events over chunked HTTP until the timeout, the client
// going away, or the storage ending the watch. Errors found before the
// stream starts are ordinary error responses; later ones arrive as ERROR
// events from storage. Output is flushed whenever no event is waiting
// (once the goroutines that are ready have run), so a burst goes out in
// few writes and a lone event goes out at once.
func (s *Server) watch(c *call, opts *metainternalversion.ListOptions) error {
	stream := c.out.info.StreamSerializer
	if stream == nil {
		return notAcceptable([]string{mediaJSON, mediaProtobuf})
	}
	flusher, ok := c.w.(http.Flusher)
	if !ok {
		return fmt.Errorf("the connection does not support streaming")
	}
	// No timeoutSeconds, or 0, is the default, as upstream: a client
	// that sends 0 must not get an empty watch to re-watch at once.
	timeout := s.minWatch + time.Duration(rand.Int64N(int64(s.minWatch)))
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds > 0 {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	ctx, cancel := context.WithTimeout(c.ctx(), timeout)
	defer cancel()
	// Every write of the stream must complete within the write timeout,
	// so that a client that stops reading does not keep this goroutine
	// past the watch's end (see writeBound).
	bound := newWriteBound(c.w)
	defer bound.stop()
	rw := &boundedWriter{w: c.w, flusher: flusher, bound: bound, timeout: s.writeTimeout}
	w, err := c.store.Watch(ctx, c.info.Namespace, opts)
	if err != nil {
		return err
	}
	defer w.Stop()

	mediaType := c.out.info.MediaType
	if mediaType != mediaJSON {
		mediaType += ";stream=watch"
	}
	s.writeWarnings(c)
	h := c.w.Header()
	h.Set("Content-Type", mediaType)
	h.Set("Transfer-Encoding", "chunked")
	h.Set("X-Content-Type-Options", "nosniff")
	// A streaming list (sendInitialEvents with bookmarks) is gzipped for
	// clients that take gzip, as upstream's (see watchListGzip).
	watchList := isWatchList(opts.SendInitialEvents, opts.AllowWatchBookmarks)
	compress := watchList && acceptsGzip(c.r)
	if compress {
		watchGzipHeaders(h)
	}
	c.w.WriteHeader(http.StatusOK)
	rw.Flush()

	gv := c.strategy().Kind.GroupVersion()
	objects := s.encoderFor(c.out.info.Serializer, gv)
	if c.out.table != nil {
		objects = s.encoderFor(c.out.info.Serializer, *c.out.table)
	}
	if c.out.partial != "" {
		objects = s.encoderFor(c.out.info.Serializer, metav1.SchemeGroupVersion)
	}
	// A streaming list (sendInitialEvents with bookmarks) sends the whole
	// state before its initial-events-end bookmark, and the client waits
	// for that bookmark: those events go out in 64 KiB writes with no
	// flush per event; live events are flushed as they come.
	// Live events gather in live until the watch flushes (see
	// watchflush.go).
	live := &batchWriter{w: rw, pool: &s.watchBatches}
	out := &switchWriter{w: live}
	var initial *bufio.Writer
	// Only a watch with bookmarks gets the initial-events-end bookmark
	// that ends this buffering; without, initial events are live ones.
	if watchList {
		initial = bufio.NewWriterSize(rw, largeWriteSize)
		out.w = initial
	}
	// A compressed streaming list writes through gz: its initial events
	// into the 64 KiB writer, its live events straight to the response.
	var gz *watchListGzip
	if compress {
		gz = newWatchListGzip(initial, &s.gzips, &s.watchGzips)
		out.w = gz
	}
	events := streaming.NewEncoder(stream.Framer.NewFrameWriter(out), stream.Serializer)
	// Objects of the watch cache go out as frames around their cached
	// list bytes (see cachedFrames); Tables and metadata are built per
	// event.
	var frames *cachedFrames
	if c.out.table == nil && c.out.partial == "" && (c.out.info.MediaType == mediaJSON || c.out.info.MediaType == mediaProtobuf) {
		if frames, err = newCachedFrames(c.out.info.MediaType == mediaProtobuf, c.strategy().Kind); err != nil {
			return nil // the stream has started: end it, the client re-watches
		}
	}
	ew := &eventWriter{s: s, c: c, out: out, live: live, frames: frames, objects: objects, events: events,
		jsonFrames: c.out.info.MediaType == mediaJSON}
	defer func() {
		// The watch may end during its initial events (an error, the
		// timeout) or between flushes: what was written still goes out,
		// as a complete gzip stream when compressed.
		if gz != nil {
			gz.endMember()
		}
		if initial != nil {
			initial.Flush()
		}
		live.writeOut()
	}()
	flushLive := func() error {
		if gz != nil {
			if err := gz.endMember(); err != nil {
				return err
			}
		}
		if err := live.writeOut(); err != nil {
			return err
		}
		rw.Flush()
		return nil
	}
	var recordEvent func(size int)
	if s.opts.Metrics != nil {
		recordEvent = s.opts.Metrics.WatchEvents(gv.Group, gv.Version, c.info.Resource).Record
	}
	results := w.ResultChan()
	for {
		// An event already waiting is taken without a select on ctx too,
		// which costs as much again; a storage watch ends with ctx (and
		// closes results), and the next wait looks at ctx anyway.
		var ev watch.Event
		var ok bool
		select {
		case ev, ok = <-results:
		default:
			select {
			case <-ctx.Done():
				return nil
			case ev, ok = <-results:
			}
		}
		if !ok {
			return nil
		}
		size, err := ew.write(ev)
		if err != nil {
			return nil // the stream has started (or the client went away): end it, the client re-watches
		}
		if recordEvent != nil {
			recordEvent(size)
		}
		if initial != nil && ev.Type == watch.Bookmark {
			// The initial-events-end bookmark (the first bookmark of
			// a streaming list): from here on, events are live.
			if gz != nil {
				if err := gz.endMember(); err != nil {
					return nil
				}
				gz.w = live
			} else {
				out.w = live
			}
			if err := initial.Flush(); err != nil {
				return nil
			}
			initial = nil
		}
		if initial == nil && len(results) == 0 {
			// Let the goroutines that are ready run once before
			// flushing: under load the dispatcher is among them and
			// brings the next events, which then share the flush (one
			// hand-off to the HTTP/2 connection and one frame for
			// several events); with nothing else ready this returns at
			// once and a lone event is not delayed.
			goruntime.Gosched()
			if len(results) == 0 && flushLive() != nil {
				return nil
			}
		}
	}
}

// switchWriter writes to w, which the watch loop changes once.
type switchWriter struct{ w io.Writer }

func (s *switchWriter) Write(p []byte) (int, error) { return s.w.Write(p) }

// eventWriter writes the events of one watch in its negotiated form.
type eventWriter struct {
	s   *Server
	c   *call
	out *switchWriter
	// live is the batch of live events, out's writer once initial events
	// are sent (unless compressed).
	live *batchWriter
	// frames writes objects of the watch cache (nil for Tables and
	// metadata); objects encodes the others, and events frames them.
	frames  *cachedFrames
	objects runtime.Encoder
	events  streaming.Encoder
	// jsonFrames: JSON watch frames are the bare event objects, one a
	// line (the JSON framer writes through), so ADDED, MODIFIED and
	// DELETED events are framed by hand; bookmarks and errors take the
	// encoder.
	jsonFrames bool
	buf        bytes.Buffer
	started    bool // an event has been written (Tables: headers sent)
}

// write writes one event and returns the size of its object.
func (e *eventWriter) write(ev watch.Event) (int, error) {
	c := e.c
	e.buf.Reset()
	if co, ok := ev.Object.(*watchcache.CachedObject); ok && e.frames != nil && jsonEventPrefix(ev.Type) != "" {
		// A live event goes straight into the batch; an initial one
		// through the writer of initial events.
		live := e.out.w == io.Writer(e.live)
		dst := &e.buf
		if live {
			dst = e.live.batch()
		}
		size, err := e.frames.appendEvent(dst, ev.Type, co)
		if err != nil {
			return 0, err // nothing was appended
		}
		e.started = true
		if live {
			return size, e.live.appended()
		}
		_, err = e.out.Write(e.buf.Bytes())
		return size, err
	}
	obj := ev.Object
	if co, ok := obj.(runtime.CacheableObject); ok && (c.out.table != nil || c.out.partial != "") {
		// Converting needs the object itself (a copy: cached objects are
		// shared).
		obj = co.GetObject()
		ev.Object = obj
	}
	if c.out.table != nil && ev.Type != watch.Error {
		table, err := e.s.watchTable(c, ev, e.started)
		if err != nil {
			return 0, err
		}
		obj = table
	}
	if c.out.partial != "" && ev.Type != watch.Error {
		partial, err := asPartial(obj)
		if err != nil {
			return 0, err
		}
		obj = partial
	}
	e.started = true
	var prefix string
	if e.jsonFrames {
		prefix = jsonEventPrefix(ev.Type)
	}
	e.buf.WriteString(prefix)
	if err := e.objects.Encode(obj, &e.buf); err != nil {
		return 0, err
	}
	size := e.buf.Len() - len(prefix)
	if prefix != "" && size > 0 {
		// The object's JSON is already compact: close the frame around
		// it by hand instead of having encoding/json re-scan it in a
		// WatchEvent.
		finishJSONEvent(&e.buf)
		_, err := e.out.Write(e.buf.Bytes())
		return size, err
	}
	raw := e.buf.Bytes()[len(prefix):]
	return size, e.events.Encode(&metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: raw}})
}

// watchTable is one watch event as a Table (kubectl get -w): column
// definitions only in the first, a bare resourceVersion for bookmarks.
func (s *Server) watchTable(c *call, ev watch.Event, noHeaders bool) (runtime.Object, error) {
	if ev.Type == watch.Bookmark {
		t := &metav1.Table{}
		t.SetGroupVersionKind(c.out.table.WithKind("Table"))
		if m, ok := ev.Object.(metav1.Object); ok {
			t.ResourceVersion = m.GetResourceVersion()
		}
		return t, nil
	}
	include := metav1.IncludeObjectPolicy(c.r.URL.Query().Get("includeObject"))
	return s.opts.Tables(ev.Object, include, noHeaders, *c.out.table)
}

// jsonEventPrefix is the start of a JSON watch event of type t, up to its
// object, as encoding/json writes a metav1.WatchEvent; "" for the types
// that keep the encoder (bookmarks, errors).
func jsonEventPrefix(t watch.EventType) string {
	switch t {
	case watch.Added:
		return `{"type":"ADDED","object":`
	case watch.Modified:
		return `{"type":"MODIFIED","object":`
	case watch.Deleted:
		return `{"type":"DELETED","object":`
	}
	return ""
}

// finishJSONEvent ends a JSON watch event in buf, which holds
// jsonEventPrefix and then the object as the JSON serializer encodes it:
// compact, HTML-escaped (encoding/json's Encoder), with a newline at the
// end. That is what encoding/json makes of the event's RawExtension
// (it compacts the raw bytes, which drops the newline), so the frame is
// byte for byte what the streaming encoder writes.
func finishJSONEvent(buf *bytes.Buffer) {
	if b := buf.Bytes(); len(b) > 0 && b[len(b)-1] == '\n' {
		buf.Truncate(len(b) - 1)
	}
	buf.WriteString("}\n")
}
