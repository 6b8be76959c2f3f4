package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kite-project/kite/agent/kubetypes"
)

// The tests below run the source with a rescan period of an hour: whatever
// they see comes from inotify.
const noRescan = time.Hour

func TestRunSendsFirstSnapshotAtOnce(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "web.yaml"), manifestYAML("web", "v1"))
	out, _ := runSource(t, Options{Path: dir, CheckFrequency: noRescan})
	if got := names(next(t, out).Pods); got != "default/web-node1:v1" {
		t.Fatalf("first snapshot %q", got)
	}
}

func TestRunFollowsDirectoryThroughInotify(t *testing.T) {
	dir := t.TempDir()
	out, rec := runSource(t, Options{Path: dir, CheckFrequency: noRescan, SettlePeriod: 50 * time.Millisecond})
	if got := names(next(t, out).Pods); got != "" {
		t.Fatalf("first snapshot %q, want empty", got)
	}

	manifest := filepath.Join(dir, "web.yaml")
	start := time.Now()
	writeAtomic(t, manifest, manifestYAML("web", "v1"))
	if got := names(next(t, out).Pods); got != "default/web-node1:v1" {
		t.Fatalf("after add: %q", got)
	}
	t.Logf("manifest added → snapshot in %v", time.Since(start))

	writeAtomic(t, manifest, manifestYAML("web", "v2"))
	if got := names(next(t, out).Pods); got != "default/web-node1:v2" {
		t.Fatalf("after edit: %q", got)
	}

	// Written in place, not atomically: the reader may see it half-written,
	// which must neither be reported nor change the pod.
	if err := os.WriteFile(manifest, []byte(manifestYAML("web", "v3")), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := names(next(t, out).Pods); got != "default/web-node1:v3" {
		t.Fatalf("after in-place edit: %q", got)
	}

	writeAtomic(t, manifest, "apiVersion: v1\nkind: Pod\nmetadata: {name: web\n")
	rec.waitProblem(t, kubetypes.ReasonFailedToParse, manifest)
	quiet(t, out, 100*time.Millisecond)

	if err := os.Remove(manifest); err != nil {
		t.Fatal(err)
	}
	if got := names(next(t, out).Pods); got != "" {
		t.Fatalf("after remove: %q", got)
	}
	for _, p := range rec.list() {
		if p.Reason != kubetypes.ReasonFailedToParse {
			t.Errorf("unexpected problem %v", p)
		}
	}
}

func TestRunIgnoresLeftoversThroughInotify(t *testing.T) {
	dir := t.TempDir()
	out, _ := runSource(t, Options{Path: dir, CheckFrequency: noRescan})
	next(t, out)
	writeAtomic(t, filepath.Join(dir, "web.yaml.bak"), manifestYAML("web", "v1"))
	writeAtomic(t, filepath.Join(dir, "web.yaml"), manifestYAML("web", "v2"))
	if got := names(next(t, out).Pods); got != "default/web-node1:v2" {
		t.Fatalf("got %q, want only web.yaml's pod", got)
	}
}

// TestRunSingleFileEditedByRename: an editor's atomic save replaces the
// watched inode; watching the parent directory still sees it (upstream
// waits for the rescan, F-16).
func TestRunSingleFileEditedByRename(t *testing.T) {
	dir := t.TempDir()
	manifest := filepath.Join(dir, "web.yaml")
	writeAtomic(t, manifest, manifestYAML("web", "v1"))
	out, _ := runSource(t, Options{Path: manifest, CheckFrequency: noRescan})
	next(t, out)
	for _, image := range []string{"v2", "v3"} {
		writeAtomic(t, manifest, manifestYAML("web", image))
		if got := names(next(t, out).Pods); got != "default/web-node1:"+image {
			t.Fatalf("got %q, want image %s", got, image)
		}
	}
}

// TestRunDirectoryCreatedLater: the directory does not exist at the start;
// its creation is seen through the parent directory.
func TestRunDirectoryCreatedLater(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "manifests")
	out, rec := runSource(t, Options{Path: dir, CheckFrequency: noRescan})
	if got := names(next(t, out).Pods); got != "" {
		t.Fatalf("first snapshot %q, want empty", got)
	}
	rec.waitProblem(t, kubetypes.ReasonFailedToRead, dir)

	// Created with its manifest inside at once, the way a tool would.
	staging := dir + ".staging"
	if err := os.Mkdir(staging, 0o755); err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, filepath.Join(staging, "web.yaml"), manifestYAML("web", "v1"))
	if err := os.Rename(staging, dir); err != nil {
		t.Fatal(err)
	}
	if got := names(next(t, out).Pods); got != "default/web-node1:v1" {
		t.Fatalf("got %q", got)
	}
	// And files added to it afterwards are seen too.
	writeAtomic(t, filepath.Join(dir, "db.yaml"), manifestYAML("db", "v1"))
	if got := names(next(t, out).Pods); got != "default/db-node1:v1,default/web-node1:v1" {
		t.Fatalf("got %q", got)
	}
}

func TestRunRescansPeriodically(t *testing.T) {
	// Without a usable watch (here: a period short enough to matter), the
	// rescan alone finds changes. The watch is on too, so this checks only
	// that a rescan does not disturb anything.
	dir := t.TempDir()
	out, _ := runSource(t, Options{Path: dir, CheckFrequency: 20 * time.Millisecond})
	next(t, out)
	quiet(t, out, 100*time.Millisecond)
	writeAtomic(t, filepath.Join(dir, "web.yaml"), manifestYAML("web", "v1"))
	if got := names(next(t, out).Pods); got != "default/web-node1:v1" {
		t.Fatalf("got %q", got)
	}
	quiet(t, out, 100*time.Millisecond)
}

func TestNewRefusesBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts Options
	}{
		{"no path", Options{NodeName: "n"}},
		{"no node", Options{Path: "/x"}},
		{"negative period", Options{Path: "/x", NodeName: "n", CheckFrequency: -time.Second}},
		{"invalid node name", Options{Path: "/x", NodeName: "Node_1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.opts); err == nil {
				t.Fatal("New succeeded")
			}
		})
	}
}

// TestPathSpellingDoesNotChangeUIDs: the UID includes the manifest's path,
// so "dir", "dir/" and "./dir" must name the same files.
func TestPathSpellingDoesNotChangeUIDs(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "web.yaml"), manifestYAML("web", "v1"))
	t.Chdir(dir)
	var uids []string
	for _, path := range []string{dir, dir + "/", ".", "./"} {
		out, _ := runSource(t, Options{Path: path, CheckFrequency: noRescan})
		u := next(t, out)
		if len(u.Pods) != 1 {
			t.Fatalf("path %q: %d pods", path, len(u.Pods))
		}
		uids = append(uids, string(u.Pods[0].UID))
	}
	for i, uid := range uids {
		if uid != uids[0] {
			t.Errorf("UID %d is %s, want %s for every spelling of the path", i, uid, uids[0])
		}
	}
}

// TestRunUnreadablePathAtStartStaysUnseen: the source sends no snapshot
// while its directory cannot be read (here ENOTDIR, which fails for root
// too), and its first one once it can.
func TestRunUnreadablePathAtStartStaysUnseen(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "etc", "manifests")
	write(t, filepath.Join(root, "etc"), "a file, not a directory")
	out, rec := runSource(t, Options{Path: dir, CheckFrequency: 50 * time.Millisecond})
	rec.waitProblem(t, kubetypes.ReasonFailedToRead, dir)
	quiet(t, out, 200*time.Millisecond)

	staging := filepath.Join(root, "staging")
	write(t, filepath.Join(staging, "manifests", "web.yaml"), manifestYAML("web", "v1"))
	mustDo(t, os.Remove(filepath.Join(root, "etc")))
	mustDo(t, os.Rename(staging, filepath.Join(root, "etc")))
	if got := names(next(t, out).Pods); got != "default/web-node1:v1" {
		t.Fatalf("first snapshot %q, want the pod", got)
	}
}
