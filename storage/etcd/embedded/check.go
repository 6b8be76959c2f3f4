package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/client/pkg/v3/fileutil"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// ErrCorrupt is returned when etcd's files in the data directory cannot be
// read back consistently.
var ErrCorrupt = errors.New("embedded etcd: data directory is corrupt")

// checkMember reads an existing etcd member directory before etcd opens it.
//
// etcd does not fail cleanly on damaged files: a bbolt file it cannot open
// panics in a background goroutine (the process dies with a stack trace),
// and a WAL it cannot decode either ends in log.Fatal or is "repaired" by
// cutting it at the first bad record, which can drop writes that the
// backend already applied and leave a member that never elects itself
// leader. Reading both files first, read-only, turns all of that into
// ErrCorrupt naming the file.
//
// The rule for the WAL follows from etcd's write order: an entry is in the
// WAL (synced) before it is applied to the backend. So a tail lost to a
// crash may only hold entries above the backend's consistent index; if the
// readable prefix of the WAL ends below it, the damage is not a torn write.
func checkMember(memberDir string) (err error) {
	fi, err := os.Stat(memberDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil // a new member: etcd creates everything
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ErrCorrupt, memberDir)
	}
	dbPath := filepath.Join(memberDir, "snap", "db")
	applied, err := consistentIndex(dbPath)
	if err != nil {
		return fmt.Errorf("%w: backend %s: %w", ErrCorrupt, dbPath, err)
	}
	walDir := filepath.Join(memberDir, "wal")
	last, err := lastWALIndex(walDir)
	if err != nil {
		return fmt.Errorf("%w: WAL %s: %w", ErrCorrupt, walDir, err)
	}
	if last < applied {
		return fmt.Errorf("%w: WAL %s ends at entry %d but the backend has applied entry %d",
			ErrCorrupt, walDir, last, applied)
	}
	return nil
}

// consistentIndex opens etcd's bbolt file read-only and returns the index of
// the last raft entry applied to it.
//
// A missing or empty file is index 0: etcd rebuilds the backend from the
// WAL.
func consistentIndex(path string) (index uint64, err error) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	if fi.Size() == 0 {
		return 0, nil
	}
	// bbolt reads its file through mmap and trusts the page headers it
	// finds: a file cut short or overwritten makes it fault or dereference
	// nil, which this turns into an error.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("unreadable page: %v", r)
		}
	}()
	// The lock timeout only matters if something else holds the file; the
	// data directory lock already excludes another Kite.
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket([]byte("meta"))
		if meta == nil {
			return errors.New("no meta bucket")
		}
		if tx.Bucket([]byte("key")) == nil {
			return errors.New("no key bucket")
		}
		v := meta.Get([]byte("consistent_index"))
		if v == nil {
			return nil
		}
		if len(v) != 8 {
			return fmt.Errorf("consistent index is %d bytes, want 8", len(v))
		}
		index = binary.BigEndian.Uint64(v)
		return nil
	})
	if err != nil {
		return 0, err
	}
	if err := checkSize(db, fi.Size()); err != nil {
		return 0, err
	}
	if err := checkPages(db); err != nil {
		return 0, err
	}
	return index, nil
}

// checkSize refuses a file shorter than its meta page says. It must run
// before checkPages: bbolt's Check walks the pages in a goroutine of its
// own, where SetPanicOnFault does not reach, so a page past the end of a
// truncated file would kill the process with SIGBUS instead of failing.
func checkSize(db *bolt.DB, fileSize int64) error {
	return db.View(func(tx *bolt.Tx) error {
		if want := tx.Size(); fileSize < want {
			return fmt.Errorf("file is %d bytes but its pages reach %d: cut short", fileSize, want)
		}
		return nil
	})
}

// checkPages runs bbolt's consistency check, which visits every page: this
// catches a file cut short after its meta pages. It costs one read of the
// file, which is small next to what etcd reads while it starts.
func checkPages(db *bolt.DB) error {
	return db.View(func(tx *bolt.Tx) error {
		var first error
		for err := range tx.Check() { // drain: Check's goroutine sends them all
			if first == nil {
				first = err
			}
		}
		return first
	})
}

// lastWALIndex decodes every record of the WAL files in walDir, in order,
// and returns the index of the last entry before the end or the first
// record that does not decode. A CRC mismatch or a record that is not a
// torn tail is an error.
func lastWALIndex(walDir string) (uint64, error) {
	ents, err := os.ReadDir(walDir)
	if err != nil {
		return 0, err
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".wal") {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return 0, errors.New("no WAL files")
	}
	sort.Strings(names)
	var readers []fileutil.FileReader
	for _, n := range names {
		f, err := os.Open(filepath.Join(walDir, n))
		if err != nil {
			return 0, err
		}
		defer f.Close()
		readers = append(readers, fileutil.NewFileReader(f))
	}
	dec := wal.NewDecoder(readers...)
	// Only the last entry's index matters, so entries are kept as bytes
	// and only the last one is unmarshalled: the records' CRCs are checked
	// by the decoder either way.
	var lastEntry []byte
	var snapIndex uint64
	rec := &walpb.Record{}
	for {
		err := dec.Decode(rec)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			// A torn last record is what a crash leaves; etcd repairs it.
			// Whether it cost applied entries is checked by the caller.
			if lastEntry == nil {
				return snapIndex, nil
			}
			var e raftpb.Entry
			if err := proto.Unmarshal(lastEntry, &e); err != nil {
				return 0, fmt.Errorf("last entry: %w", err)
			}
			return max(e.GetIndex(), snapIndex), nil
		}
		if err != nil {
			return 0, err
		}
		switch rec.GetType() {
		case wal.EntryType:
			lastEntry = append(lastEntry[:0], rec.Data...)
		case wal.SnapshotType:
			var s walpb.Snapshot
			if err := proto.Unmarshal(rec.Data, &s); err != nil {
				return 0, fmt.Errorf("snapshot record: %w", err)
			}
			snapIndex = max(snapIndex, s.GetIndex())
		case wal.CrcType:
			if crc := dec.LastCRC(); crc != 0 && rec.Validate(crc) != nil {
				return 0, wal.ErrCRCMismatch
			}
			dec.UpdateCRC(rec.GetCrc())
		}
	}
}
