package apiserver

import (
	"io"
	"net/http"
	"sync"

	"github.com/klauspost/compress/gzip"

	"github.com/kite-project/kite/apiserver/pargzip"
)

// A streaming list (a watch with sendInitialEvents and bookmarks) is
// gzipped when the client accepts gzip, as kube-apiserver 1.37 does
// (feature WatchListCompression, on by default): its initial events are
// the whole collection, 20 MB of JSON for 10 000 pods. Other watches are
// not compressed, as upstream's.

// isWatchList reports whether a watch is a streaming list, by upstream's
// rule.
func isWatchList(sendInitialEvents *bool, allowBookmarks bool) bool {
	return sendInitialEvents != nil && *sendInitialEvents && allowBookmarks
}

// watchListGzip is the body writer of a compressed streaming list. Until
// the initial-events-end bookmark the events form one gzip member,
// deflated on all cores (pargzip) and written in large pieces; after it,
// each flush ends a member, so that every live event can be read as soon
// as it arrives, and returns the compressor to its pool, so that an idle
// watch holds none (upstream's perFlushGzipWriter).
type watchListGzip struct {
	w       io.Writer // the response
	initial *pargzip.Writer
	live    *gzip.Writer
	members *sync.Pool // of *gzip.Writer
}

func newWatchListGzip(w io.Writer, initial *pargzip.Pool, members *sync.Pool) *watchListGzip {
	return &watchListGzip{w: w, initial: pargzip.NewWriter(w, initial, 0), members: members}
}

func (z *watchListGzip) Write(p []byte) (int, error) {
	if z.initial != nil {
		return z.initial.Write(p)
	}
	if z.live == nil {
		z.live, _ = z.members.Get().(*gzip.Writer)
		if z.live == nil {
			var err error
			if z.live, err = gzip.NewWriterLevel(z.w, gzip.BestSpeed); err != nil {
				return 0, err
			}
		} else {
			z.live.Reset(z.w)
		}
	}
	return z.live.Write(p)
}

// endMember finishes the current gzip member, if any: after it, all that
// was written can be decompressed. The first call ends the initial
// events' member.
func (z *watchListGzip) endMember() error {
	if z.initial != nil {
		err := z.initial.Close()
		z.initial = nil
		return err
	}
	if z.live == nil {
		return nil
	}
	// A sync flush before the end: Go's gzip reader hands out the data of
	// a member's last block only once it has read the next member's
	// header, but all data before a flush marker at once.
	err := z.live.Flush()
	if cerr := z.live.Close(); err == nil {
		err = cerr
	}
	z.live.Reset(nil)
	z.members.Put(z.live)
	z.live = nil
	return err
}

// watchGzipHeaders marks a response as gzipped.
func watchGzipHeaders(h http.Header) {
	h.Set("Content-Encoding", "gzip")
	h.Add("Vary", "Accept-Encoding")
}
