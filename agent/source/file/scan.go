package file

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/agent/staticpod"
)

// manifest is what the scanner remembers of one file.
type manifest struct {
	// data is the content last read, good or bad.
	data []byte
	// pod is the last good pod of this file, kept while the file is bad.
	pod *v1.Pod
	// bad is why data did not decode; nil when it did.
	bad         error
	badSince    time.Time
	badReported bool
	// readErr is the last read error reported, so that it is reported once.
	readErr string
	// missingSince is when the file was first found gone; zero if present.
	missingSince time.Time
	// dupReported is the UID of this file's pod last reported as a duplicate.
	dupReported string
}

// scanner reads the manifests and keeps what it needs to tell what changed.
// It is owned by one goroutine.
type scanner struct {
	opts   Options
	report func(kubetypes.Problem)

	files map[string]*manifest
	// wasFile: the path was last seen as a regular file (single-file mode).
	wasFile bool
	// listErr is the listing error last reported.
	listErr string
	// sent is the last snapshot sent; nil before the first.
	sent []*v1.Pod
	// saved is each manifest's last good content on disk (StateDir);
	// loaded at the first listing that succeeds.
	saved  lastGood
	loaded bool
	// warn logs what goes wrong with the saved contents (nothing is
	// stopped for it).
	warn func(error)
}

func newScanner(opts Options, report func(kubetypes.Problem)) *scanner {
	return &scanner{opts: opts, report: report, files: map[string]*manifest{}, saved: lastGood{dir: opts.StateDir}, warn: func(error) {}}
}

// restore gives a manifest that has no good pod in memory (the first scan
// since the agent started) the pod of its last good content on disk: the
// pod that ran from it, which a file that exists but is bad or unreadable
// keeps, as it would had the agent not restarted.
func (sc *scanner) restore(name string, m *manifest) {
	data, ok := sc.saved.byPath[name]
	if m.pod != nil || !ok {
		return
	}
	pod, err := staticpod.DecodePod(data, staticpod.Origin{Source: kubetypes.FileSource, Location: name, NodeName: sc.opts.NodeName})
	if err != nil {
		// Saved by an agent that read it differently: nothing to keep.
		sc.warn(fmt.Errorf("the last good version of %s does not decode any more: %w", name, err))
		sc.forget(name)
		return
	}
	m.pod = pod
}

func (sc *scanner) forget(name string) {
	if err := sc.saved.forget(name); err != nil {
		sc.warn(err)
	}
}

// scan reads the manifests at now. It returns the pods, whether they
// differ from the last ones returned (always true the first time), and
// whether something waits for the settle period to end (a missing file, an
// unreported bad one), in which case scan should be called again then.
func (sc *scanner) scan(now time.Time) (pods []*v1.Pod, changed, pending bool) {
	names, statErrs, err := sc.list()
	if err != nil {
		if msg := err.Error(); msg != sc.listErr {
			sc.listErr = msg
			sc.problem(kubetypes.ReasonFailedToRead, sc.opts.Path, err)
		}
		if sc.sent == nil && errors.Is(err, fs.ErrNotExist) {
			// Nothing is there: an empty first report removes nothing and
			// tells the agent that this source has reported. Any other
			// error (EACCES, EIO, ELOOP) may hide manifests whose pods
			// run: the source stays unseen, so that the agent does not
			// take their mirror pods for orphans.
			sc.sent = []*v1.Pod{}
			return sc.sent, true, false
		}
		return sc.sent, false, false
	}
	sc.listErr = ""
	if !sc.loaded {
		sc.loaded = true
		if err := sc.saved.load(); err != nil {
			sc.warn(err)
		}
		// A manifest that ran before the restart and is not listed now
		// is a missing file like any other: its pod stays for the
		// settle period, then goes, with its record.
		listed := map[string]bool{}
		for _, name := range names {
			listed[name] = true
		}
		for name := range sc.saved.byPath {
			if !listed[name] {
				m := &manifest{}
				if sc.restore(name, m); m.pod != nil {
					sc.files[name] = m
				}
			}
		}
	}

	present := map[string]bool{}
	for _, name := range names {
		m := sc.files[name]
		if m == nil {
			m = &manifest{}
		}
		var data []byte
		err := statErrs[name]
		if err == nil {
			data, err = readManifest(name)
		}
		if errors.Is(err, fs.ErrNotExist) && gone(name) {
			continue // removed since the listing
		}
		present[name] = true
		sc.files[name] = m
		m.missingSince = time.Time{}
		if err != nil {
			sc.restore(name, m)
			if msg := err.Error(); msg != m.readErr {
				m.readErr = msg
				if m.pod != nil {
					err = fmt.Errorf("%w; keeping pod %s/%s from its last good version", err, m.pod.Namespace, m.pod.Name)
				}
				sc.problem(kubetypes.ReasonFailedToRead, name, err)
			}
			continue
		}
		m.readErr = ""
		if !bytes.Equal(data, m.data) || m.data == nil {
			m.data = data
			pod, err := staticpod.DecodePod(data, staticpod.Origin{Source: kubetypes.FileSource, Location: name, NodeName: sc.opts.NodeName})
			if err != nil {
				m.bad, m.badSince, m.badReported = err, now, false
				sc.restore(name, m)
			} else {
				m.pod, m.bad, m.badReported = pod, nil, false
				if err := sc.saved.save(name, data); err != nil {
					sc.warn(err)
				}
			}
		}
		if m.bad != nil && !m.badReported {
			if now.Sub(m.badSince) < sc.opts.SettlePeriod {
				pending = true
			} else {
				m.badReported = true
				reason := kubetypes.ReasonFailedToParse
				if errors.Is(m.bad, staticpod.ErrInvalid) {
					reason = kubetypes.ReasonFailedValidation
				}
				kept := ""
				if m.pod != nil {
					kept = fmt.Sprintf("; keeping pod %s/%s from its last good version", m.pod.Namespace, m.pod.Name)
				}
				sc.problem(reason, name, fmt.Errorf("%w%s", m.bad, kept))
			}
		}
	}

	var missing []string
	for name, m := range sc.files {
		if present[name] {
			continue
		}
		if m.missingSince.IsZero() {
			m.missingSince = now
		}
		if m.pod == nil || now.Sub(m.missingSince) >= sc.opts.SettlePeriod {
			delete(sc.files, name)
			sc.forget(name)
			continue
		}
		pending = true
		missing = append(missing, name)
	}
	sort.Strings(missing)

	pods = sc.collect(names, missing)
	changed = sc.sent == nil || !samePods(pods, sc.sent)
	if changed {
		sc.sent = pods
	}
	return pods, changed, pending
}

// collect returns the pods of the present files in name order, the first
// file of a pod's full name winning, then the pods of recently missing files
// whose names no present file took.
func (sc *scanner) collect(present, missing []string) []*v1.Pod {
	pods := []*v1.Pod{}
	owner := map[string]string{} // pod full name → file
	for _, name := range present {
		m := sc.files[name]
		if m == nil || m.pod == nil {
			continue
		}
		key := kubetypes.PodFullName(m.pod)
		if first, taken := owner[key]; taken {
			if m.dupReported != string(m.pod.UID) {
				m.dupReported = string(m.pod.UID)
				sc.problem(kubetypes.ReasonDuplicatePod, name, fmt.Errorf("pod %s/%s is already defined by %s, which comes first in name order; ignoring this file",
					m.pod.Namespace, m.pod.Name, first))
			}
			continue
		}
		m.dupReported = ""
		owner[key] = name
		pods = append(pods, m.pod)
	}
	for _, name := range missing {
		m := sc.files[name]
		if _, taken := owner[kubetypes.PodFullName(m.pod)]; !taken {
			owner[kubetypes.PodFullName(m.pod)] = name
			pods = append(pods, m.pod)
		}
	}
	return pods
}

// list returns the manifest files to read, sorted: the regular files of the
// directory that are not ignored, or the path itself when it is a file. A
// missing single file lists as nothing; a missing directory is an error that
// wraps fs.ErrNotExist, and no other error does.
//
// A symbolic link is followed. One whose target cannot be read (missing,
// ELOOP, ENOTDIR, EACCES) is listed all the same, with its error in
// statErrs: only a directory entry that is itself gone removes a pod.
func (sc *scanner) list() (names []string, statErrs map[string]error, err error) {
	info, err := os.Stat(sc.opts.Path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("reading manifest path: %w", err)
		}
		if !gone(sc.opts.Path) {
			return nil, nil, fmt.Errorf("manifest path %s is a symbolic link whose target is missing (%v)", sc.opts.Path, err)
		}
		if sc.wasFile {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("reading manifest path: %w", err)
	}
	if info.Mode().IsRegular() {
		sc.wasFile = true
		return []string{sc.opts.Path}, nil, nil
	}
	sc.wasFile = false
	if !info.IsDir() {
		return nil, nil, fmt.Errorf("manifest path %q is not a directory or a regular file (mode %v)", sc.opts.Path, info.Mode())
	}
	entries, err := os.ReadDir(sc.opts.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading manifest directory: %w", err)
	}
	for _, e := range entries { // sorted by name
		if Ignored(e.Name()) {
			continue
		}
		name := filepath.Join(sc.opts.Path, e.Name())
		switch {
		case e.Type().IsRegular():
		case e.Type()&fs.ModeSymlink != 0:
			info, err := os.Stat(name)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) && gone(name) {
					continue // removed since ReadDir
				}
				if statErrs == nil {
					statErrs = map[string]error{}
				}
				statErrs[name] = fmt.Errorf("reading the target of symbolic link %s: %w", name, err)
			} else if !info.Mode().IsRegular() {
				continue // a link to a sub-directory, a socket
			}
		default:
			continue // sub-directories, sockets
		}
		names = append(names, name)
	}
	return names, statErrs, nil
}

// gone says whether name's directory entry itself is missing, rather than
// the target of a symbolic link it names.
func gone(name string) bool {
	_, err := os.Lstat(name)
	return errors.Is(err, fs.ErrNotExist)
}

func (sc *scanner) problem(reason, where string, err error) {
	sc.report(kubetypes.Problem{Source: kubetypes.FileSource, Reason: reason, Where: where, Err: err})
}

// readManifest reads a file of at most staticpod.MaxManifestBytes.
func readManifest(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, staticpod.MaxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading manifest: %w", err)
	}
	if len(data) > staticpod.MaxManifestBytes {
		return nil, fmt.Errorf("manifest is larger than the limit of %d bytes", staticpod.MaxManifestBytes)
	}
	return data, nil
}

// samePods compares two snapshots by pod identity: pods are decoded once
// per content and never modified, so the same content is the same pointer.
func samePods(a, b []*v1.Pod) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func isDir(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}
