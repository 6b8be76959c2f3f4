// Package file is the agent's "file" pod source (--pod-manifest-path): a
// directory of static pod manifests, or one manifest file.
//
// Each manifest holds one pod, YAML or JSON. In a directory, names starting
// with "." are ignored, and so are editor leftovers: names ending in "~",
// ".swp", ".bak", ".backup" or ".tmp" (upstream reads them, and a backup file
// can silently replace the real manifest, kubernetes/kubernetes#136962).
// Sub-directories are not read. Symbolic links are followed.
//
// The source reacts to changes through inotify (fsnotify), watching the
// directory and its parent (so that a directory created late, or a single
// manifest replaced by an editor's atomic rename, is seen), and re-reads
// everything every CheckFrequency as a safety net. After every read it sends
// the complete set of its pods (a SET) if it changed.
//
// What it does with bad input, so that a running pod never stops because of
// a mistake:
//   - A manifest that does not decode or validate is reported (log line
//     naming the file and the reason, and the ProblemReporter) and skipped;
//     if it had held a good pod before, that pod is kept, until the file is
//     valid again or removed. A bad manifest is reported once it has stayed
//     bad for SettlePeriod, so that a file read half-written is not reported.
//   - Two manifests that define the same pod (namespace and name): the
//     first in name order wins and the other is reported, with both names.
//   - A directory that cannot be read (missing, permission) is reported and
//     removes nothing. Before the first good read, a missing path is an
//     empty source, but any other error (EACCES, EIO, ELOOP, ENOTDIR) sends
//     nothing: the source stays unseen until the path can be read, so that
//     an agent restarted during the fault does not delete the mirror pods
//     of the static pods it cannot see. A manifest file that disappears (from the directory,
//     or the single file) removes its pod once it has been gone for
//     SettlePeriod: editors that save by renaming do not restart the pod.
//   - A manifest that is a symbolic link whose target cannot be read (gone,
//     a link loop, a directory on the way replaced) is reported and keeps
//     its pod, as an unreadable file does: only removing the link itself
//     removes the pod.
//   - The last good content of each manifest is kept under StateDir, so
//     all of the above holds across an agent restart: a manifest that
//     exists but cannot be read or decoded at the first read keeps the pod
//     that ran from it (the same UID, since that is a hash of the content),
//     reported as any bad manifest is. Only a manifest that is really gone
//     removes its pod, after SettlePeriod.
package file

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/agent/staticpod"
)

// Defaults, as upstream where upstream has them.
const (
	DefaultCheckFrequency = 20 * time.Second
	DefaultSettlePeriod   = 250 * time.Millisecond
)

// Options configures a file source.
type Options struct {
	// Path is the manifest directory or file (--pod-manifest-path).
	Path string
	// NodeName is the node the agent runs as; static pods are named after it.
	NodeName string
	// CheckFrequency is the period of full re-reads (--file-check-frequency);
	// zero means DefaultCheckFrequency.
	CheckFrequency time.Duration
	// SettlePeriod is how long a manifest must stay missing before its pod
	// is removed, and stay bad before it is reported; zero means
	// DefaultSettlePeriod. It does not delay adds and changes.
	SettlePeriod time.Duration
	// Reporter, if set, receives the problems found, besides the log line.
	Reporter kubetypes.ProblemReporter
	// StateDir, if set, is where the source keeps the last good content
	// of each manifest (the agent's <root-dir>/static-pod-manifests), so
	// that a manifest found bad or unreadable by the first read after a
	// restart keeps the pod that ran from it. Without it such a pod is
	// removed.
	StateDir string
}

// Source reads static pods from manifest files.
type Source struct {
	opts Options
}

// New checks opts and returns a source; Run starts it.
func New(opts Options) (*Source, error) {
	if opts.Path == "" {
		return nil, errors.New("file source: no manifest path given")
	}
	if opts.NodeName == "" {
		return nil, fmt.Errorf("file source %q: no node name given", opts.Path)
	}
	if err := staticpod.ValidateNodeName(opts.NodeName); err != nil {
		return nil, fmt.Errorf("file source %q: %w", opts.Path, err)
	}
	if opts.CheckFrequency < 0 || opts.SettlePeriod < 0 {
		return nil, fmt.Errorf("file source %q: negative check frequency %v or settle period %v", opts.Path, opts.CheckFrequency, opts.SettlePeriod)
	}
	if opts.CheckFrequency == 0 {
		opts.CheckFrequency = DefaultCheckFrequency
	}
	if opts.SettlePeriod == 0 {
		opts.SettlePeriod = DefaultSettlePeriod
	}
	// Absolute and clean: the watcher reports paths without trailing
	// separators, and a pod's UID includes its file's path, which must not
	// change with the working directory or the spelling of the flag.
	abs, err := filepath.Abs(opts.Path)
	if err != nil {
		return nil, fmt.Errorf("file source %q: %w", opts.Path, err)
	}
	opts.Path = abs
	return &Source{opts: opts}, nil
}

// Run reads the manifests and sends a SET to out whenever the set of pods
// changes (and once at the start), until ctx ends.
func (s *Source) Run(ctx context.Context, out chan<- kubetypes.PodUpdate) {
	logger := klog.FromContext(ctx).WithValues("source", kubetypes.FileSource, "path", s.opts.Path)
	sc := newScanner(s.opts, func(p kubetypes.Problem) {
		logger.Error(p.Err, "Pod manifest problem", "reason", p.Reason, "file", p.Where)
		if s.opts.Reporter != nil {
			s.opts.Reporter.ReportProblem(p)
		}
	})
	sc.warn = func(err error) { logger.Error(err, "Last good manifests") }

	// Watch before the first read, so that no change between the two is
	// missed. Without a watcher the periodic read still works.
	w, err := fsnotify.NewWatcher()
	var events <-chan fsnotify.Event
	var watchErrors <-chan error
	if err != nil {
		logger.Error(err, "Cannot watch manifests, reading them every check period only", "period", s.opts.CheckFrequency)
	} else {
		defer w.Close()
		events, watchErrors = w.Events, w.Errors
		s.ensureWatches(logger, w)
		logger.V(1).Info("Watching path")
	}

	ticker := time.NewTicker(s.opts.CheckFrequency)
	defer ticker.Stop()
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	defer settle.Stop()

	for {
		pods, changed, pending := sc.scan(time.Now())
		if changed {
			select {
			case out <- kubetypes.PodUpdate{Op: kubetypes.SET, Source: kubetypes.FileSource, Pods: pods}:
			case <-ctx.Done():
				return
			}
		}
		if pending {
			settle.Reset(s.opts.SettlePeriod)
		}
		if w != nil && s.ensureWatches(logger, w) {
			// A directory appeared and is watched from now on; what was
			// written into it before the watch began is found by reading
			// again.
			continue
		}

	wait:
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				break wait
			case <-settle.C:
				break wait
			case ev, ok := <-events:
				if !ok {
					events = nil
					continue
				}
				if s.relevant(ev.Name) {
					logger.V(4).Info("Manifest event", "event", ev.String())
					drain(events)
					break wait
				}
			case err, ok := <-watchErrors:
				if !ok {
					watchErrors = nil
					continue
				}
				// An overflow means events were lost: read everything now.
				logger.Error(err, "Watching manifests, reading them again")
				break wait
			}
		}
	}
}

// relevant says whether an event on name may change the pods: an event on
// the path itself (seen through the parent directory), or on a manifest
// inside the directory.
func (s *Source) relevant(name string) bool {
	name = filepath.Clean(name)
	if name == s.opts.Path {
		return true
	}
	return filepath.Dir(name) == s.opts.Path && !Ignored(filepath.Base(name))
}

// ensureWatches watches the parent directory and, when the path is a
// directory, the path itself, adding what is missing: the path may appear,
// or be replaced, after the start. It says whether it added a watch.
func (s *Source) ensureWatches(logger klog.Logger, w *fsnotify.Watcher) (added bool) {
	watched := map[string]bool{}
	for _, p := range w.WatchList() {
		watched[filepath.Clean(p)] = true
	}
	for _, p := range []string{filepath.Dir(s.opts.Path), s.opts.Path} {
		if watched[p] || !isDir(p) {
			continue
		}
		if err := w.Add(p); err != nil {
			logger.V(2).Info("Cannot watch, relying on the periodic read", "dir", p, "err", err)
			continue
		}
		added = true
	}
	return added
}

// drain discards the events already queued: the read that follows covers
// them.
func drain(events <-chan fsnotify.Event) {
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		default:
			return
		}
	}
}
