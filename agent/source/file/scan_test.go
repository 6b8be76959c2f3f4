package file

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kite-project/kite/agent/kubetypes"
)

const settle = time.Second

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// newTestScanner scans path with a settle period of one (fake) second.
func newTestScanner(path string) (*scanner, *recorder) {
	rec := &recorder{}
	opts := Options{Path: path, NodeName: nodeName, SettlePeriod: settle}
	return newScanner(opts, rec.ReportProblem), rec
}

func mustScan(t *testing.T, sc *scanner, now time.Time, wantPods string, wantChanged bool) []*v1.Pod {
	t.Helper()
	pods, changed, _ := sc.scan(now)
	if got := names(pods); got != wantPods || changed != wantChanged {
		t.Fatalf("scan at +%v: pods %q changed %v, want %q changed %v", now.Sub(t0), got, changed, wantPods, wantChanged)
	}
	return pods
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestScanReadsManifestsExistingAlready mirrors upstream's
// TestReadPodsFromFileExistAlready for a directory and for one file: the pod
// is defaulted as a static pod.
func TestScanReadsManifestsExistingAlready(t *testing.T) {
	for _, mode := range []string{"directory", "file"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			manifest := filepath.Join(dir, "web.yaml")
			write(t, manifest, manifestYAML("web", "nginx"))
			path := dir
			if mode == "file" {
				path = manifest
			}
			sc, rec := newTestScanner(path)
			pods := mustScan(t, sc, t0, "default/web-node1:nginx", true)
			pod := pods[0]
			if pod.Spec.NodeName != nodeName || pod.Status.Phase != v1.PodPending || pod.UID == "" ||
				pod.Annotations[kubetypes.ConfigHashAnnotationKey] != string(pod.UID) {
				t.Errorf("pod not defaulted as a static pod: nodeName %q phase %q uid %q annotations %v",
					pod.Spec.NodeName, pod.Status.Phase, pod.UID, pod.Annotations)
			}
			mustScan(t, sc, t0.Add(time.Second), "default/web-node1:nginx", false)
			if p := rec.list(); len(p) != 0 {
				t.Errorf("problems %v, want none", p)
			}
		})
	}
}

func TestScanIgnoresLeftoversAndSubdirectories(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), manifestYAML("a", "i"))
	write(t, filepath.Join(dir, "b.json"), `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"i"}]}}`)
	for _, ignored := range []string{".hidden.yaml", "a.yaml~", ".a.yaml.swp", "a.yaml.swp", "a.yaml.bak", "a.yaml.backup", "a.yaml.tmp"} {
		write(t, filepath.Join(dir, ignored), manifestYAML("ignored-"+strings.Trim(ignored, ".~"), "i"))
	}
	write(t, filepath.Join(dir, "sub", "c.yaml"), manifestYAML("c", "i"))
	if err := os.Symlink(filepath.Join(dir, "sub", "c.yaml"), filepath.Join(dir, "linked.yaml")); err != nil {
		t.Fatal(err)
	}
	sc, rec := newTestScanner(dir)
	mustScan(t, sc, t0, "default/a-node1:i,default/b-node1:i,default/c-node1:i", true)
	if p := rec.list(); len(p) != 0 {
		t.Errorf("problems %v, want none", p)
	}
}

// TestScanEmptyDirectory mirrors upstream's TestExtractFromEmptyDir.
func TestScanEmptyDirectory(t *testing.T) {
	sc, _ := newTestScanner(t.TempDir())
	mustScan(t, sc, t0, "", true)
	mustScan(t, sc, t0.Add(time.Second), "", false)
}

// TestScanMissingPath mirrors upstream's TestExtractFromNonExistentFile and
// TestUpdateOnNonExistentFile: reported, and an empty first snapshot.
func TestScanMissingPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "manifests")
	sc, rec := newTestScanner(dir)
	mustScan(t, sc, t0, "", true)
	if p := rec.list(); len(p) != 1 || p[0].Reason != kubetypes.ReasonFailedToRead || p[0].Where != dir {
		t.Fatalf("problems %v, want one FailedToRead about %s", p, dir)
	}
	mustScan(t, sc, t0.Add(time.Second), "", false)
	if p := rec.list(); len(p) != 1 {
		t.Fatalf("the same error was reported again: %v", p)
	}
	// It appears later (upstream's TestReadPodsFromFileExistLater).
	write(t, filepath.Join(dir, "web.yaml"), manifestYAML("web", "nginx"))
	mustScan(t, sc, t0.Add(2*time.Second), "default/web-node1:nginx", true)
}

// TestScanBadFile mirrors upstream's TestExtractFromBadDataFile: no pod,
// reported (once it has stayed bad for the settle period), others untouched.
func TestScanBadFile(t *testing.T) {
	tests := []struct {
		name, content, reason string
	}{
		{"not yaml", "{{{ not yaml", kubetypes.ReasonFailedToParse},
		{"not a pod", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n", kubetypes.ReasonFailedToParse},
		{"empty", "", kubetypes.ReasonFailedToParse},
		{"invalid pod", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: []}\n", kubetypes.ReasonFailedValidation},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bad := filepath.Join(dir, "bad.yaml")
			write(t, bad, tc.content)
			write(t, filepath.Join(dir, "good.yaml"), manifestYAML("good", "i"))
			sc, rec := newTestScanner(dir)
			if _, _, pending := sc.scan(t0); !pending || len(rec.list()) != 0 {
				t.Fatalf("a new bad file was reported before settling (pending %v, problems %v)", pending, rec.list())
			}
			mustScan(t, sc, t0.Add(settle), "default/good-node1:i", false)
			p := rec.list()
			if len(p) != 1 || p[0].Reason != tc.reason || p[0].Where != bad {
				t.Fatalf("problems %v, want one %s about %s", p, tc.reason, bad)
			}
			mustScan(t, sc, t0.Add(3*settle), "default/good-node1:i", false)
			if len(rec.list()) != 1 {
				t.Fatalf("reported again: %v", rec.list())
			}
		})
	}
}

// TestScanBadEditKeepsLastGoodPod: a pod keeps running while its manifest
// is broken, in a directory and as a single file (upstream differs between
// the two, F-7 and F-8), and changes when the manifest is fixed.
func TestScanBadEditKeepsLastGoodPod(t *testing.T) {
	for _, mode := range []string{"directory", "file"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			manifest := filepath.Join(dir, "web.yaml")
			write(t, manifest, manifestYAML("web", "v1"))
			path := dir
			if mode == "file" {
				path = manifest
			}
			sc, rec := newTestScanner(path)
			before := mustScan(t, sc, t0, "default/web-node1:v1", true)

			write(t, manifest, "apiVersion: v1\nkind: Pod\nmetadata: {name: web\n")
			after := mustScan(t, sc, t0.Add(time.Second), "default/web-node1:v1", false)
			mustScan(t, sc, t0.Add(time.Second+settle), "default/web-node1:v1", false)
			if before[0] != after[0] {
				t.Fatal("the kept pod is not the last good one")
			}
			p := rec.list()
			if len(p) != 1 || p[0].Where != manifest || !strings.Contains(p[0].Err.Error(), "keeping pod default/web-node1") {
				t.Fatalf("problems %v, want one about %s saying the pod is kept", p, manifest)
			}

			write(t, manifest, manifestYAML("web", "v2"))
			mustScan(t, sc, t0.Add(5*time.Second), "default/web-node1:v2", true)
		})
	}
}

// TestScanDuplicatePod: first in name order wins; the other is reported
// once, naming both files; it takes over when the first goes.
func TestScanDuplicatePod(t *testing.T) {
	dir := t.TempDir()
	first, second := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	write(t, first, manifestYAML("web", "from-a"))
	write(t, second, manifestYAML("web", "from-b"))
	sc, rec := newTestScanner(dir)
	mustScan(t, sc, t0, "default/web-node1:from-a", true)
	mustScan(t, sc, t0.Add(time.Second), "default/web-node1:from-a", false)
	p := rec.list()
	if len(p) != 1 || p[0].Reason != kubetypes.ReasonDuplicatePod || p[0].Where != second || !strings.Contains(p[0].Err.Error(), first) {
		t.Fatalf("problems %v, want one DuplicatePod about %s naming %s", p, second, first)
	}
	if err := os.Remove(first); err != nil {
		t.Fatal(err)
	}
	mustScan(t, sc, t0.Add(2*time.Second), "default/web-node1:from-b", true)
}

// TestScanRemovedManifestSettles: a manifest gone removes its pod after the
// settle period, and one put back in time (an editor's rename dance) changes
// nothing.
func TestScanRemovedManifestSettles(t *testing.T) {
	for _, mode := range []string{"directory", "file"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			manifest := filepath.Join(dir, "web.yaml")
			write(t, manifest, manifestYAML("web", "v1"))
			path := dir
			if mode == "file" {
				path = manifest
			}
			sc, _ := newTestScanner(path)
			mustScan(t, sc, t0, "default/web-node1:v1", true)

			if err := os.Rename(manifest, manifest+"~"); err != nil {
				t.Fatal(err)
			}
			if _, _, pending := sc.scan(t0.Add(time.Second)); !pending {
				t.Fatal("a missing manifest is not pending")
			}
			write(t, manifest, manifestYAML("web", "v1"))
			mustScan(t, sc, t0.Add(time.Second+settle/2), "default/web-node1:v1", false)

			if err := os.Remove(manifest); err != nil {
				t.Fatal(err)
			}
			mustScan(t, sc, t0.Add(2*time.Second), "default/web-node1:v1", false)
			mustScan(t, sc, t0.Add(2*time.Second+settle), "", true)
		})
	}
}

// TestScanRenamedManifest mirrors upstream's rename in a directory: the
// pod's identity includes its file, so it is replaced at once, without a
// duplicate report.
func TestScanRenamedManifest(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "b.yaml"), manifestYAML("web", "v1"))
	sc, rec := newTestScanner(dir)
	before := mustScan(t, sc, t0, "default/web-node1:v1", true)
	if err := os.Rename(filepath.Join(dir, "b.yaml"), filepath.Join(dir, "c.yaml")); err != nil {
		t.Fatal(err)
	}
	after := mustScan(t, sc, t0.Add(time.Second), "default/web-node1:v1", true)
	if before[0].UID == after[0].UID {
		t.Error("renamed manifest kept its UID")
	}
	if p := rec.list(); len(p) != 0 {
		t.Errorf("problems %v, want none", p)
	}
}

// TestScanDirectoryGoneRemovesNothing: an unreadable directory is reported
// and the pods stay.
func TestScanDirectoryGoneRemovesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "manifests")
	write(t, filepath.Join(dir, "web.yaml"), manifestYAML("web", "v1"))
	sc, rec := newTestScanner(dir)
	mustScan(t, sc, t0, "default/web-node1:v1", true)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	mustScan(t, sc, t0.Add(time.Second), "default/web-node1:v1", false)
	mustScan(t, sc, t0.Add(time.Second+2*settle), "default/web-node1:v1", false)
	if p := rec.list(); len(p) != 1 || p[0].Reason != kubetypes.ReasonFailedToRead {
		t.Fatalf("problems %v, want one FailedToRead", p)
	}
}

// TestScanUnreadableLinkTargetKeepsPod: a manifest that is a symbolic link
// keeps its pod when the link's target becomes unreadable, and the error is
// reported; only removing the link itself removes the pod. The tests run as
// root, for whom permissions never fail, so the targets fail in ways that
// fail for root too.
func TestScanUnreadableLinkTargetKeepsPod(t *testing.T) {
	tests := []struct {
		name string
		// breakIt makes the link in dir, pointing at target, unreadable or gone.
		breakIt  func(t *testing.T, link, target string)
		wantPods string // after the settle period
		wantErr  string // in the one problem reported; "" for none
	}{
		{"target removed (ENOENT on the target only)", func(t *testing.T, link, target string) {
			mustDo(t, os.Remove(target))
		}, "default/web-node1:v1", "no such file"},
		{"target replaced by a link loop (ELOOP)", func(t *testing.T, link, target string) {
			mustDo(t, os.Remove(target))
			mustDo(t, os.Symlink(target, target))
		}, "default/web-node1:v1", "too many levels of symbolic links"},
		{"target's directory replaced by a file (ENOTDIR)", func(t *testing.T, link, target string) {
			mustDo(t, os.RemoveAll(filepath.Dir(target)))
			write(t, filepath.Dir(target), "a file")
		}, "default/web-node1:v1", "not a directory"},
		{"link removed", func(t *testing.T, link, target string) {
			mustDo(t, os.Remove(link))
		}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "manifests")
			target := filepath.Join(root, "store", "web.yaml")
			link := filepath.Join(dir, "web.yaml")
			write(t, target, manifestYAML("web", "v1"))
			mustDo(t, os.MkdirAll(dir, 0o755))
			mustDo(t, os.Symlink(target, link))
			sc, rec := newTestScanner(dir)
			before := mustScan(t, sc, t0, "default/web-node1:v1", true)

			tc.breakIt(t, link, target)
			sc.scan(t0.Add(time.Second))
			pods, _, _ := sc.scan(t0.Add(time.Second + 2*settle))
			if got := names(pods); got != tc.wantPods {
				t.Fatalf("pods after the settle period %q, want %q", got, tc.wantPods)
			}
			if tc.wantPods != "" && pods[0] != before[0] {
				t.Error("the kept pod is not the last good one")
			}
			p := rec.list()
			if tc.wantErr == "" {
				if len(p) != 0 {
					t.Fatalf("problems %v, want none", p)
				}
				return
			}
			if len(p) != 1 || p[0].Reason != kubetypes.ReasonFailedToRead || p[0].Where != link || !strings.Contains(p[0].Err.Error(), tc.wantErr) {
				t.Fatalf("problems %v, want one FailedToRead about %s saying %q", p, link, tc.wantErr)
			}

			// Readable again: the same content is the same pod.
			mustDo(t, os.RemoveAll(filepath.Join(root, "store")))
			write(t, target, manifestYAML("web", "v1"))
			mustScan(t, sc, t0.Add(10*time.Second), "default/web-node1:v1", false)
		})
	}
}

// TestScanUnreadableLinkAsSingleFileKeepsPod: the same for a manifest path
// that is itself a link to a file.
func TestScanUnreadableLinkAsSingleFileKeepsPod(t *testing.T) {
	root := t.TempDir()
	target := filepath.Join(root, "store", "web.yaml")
	link := filepath.Join(root, "web.yaml")
	write(t, target, manifestYAML("web", "v1"))
	mustDo(t, os.Symlink(target, link))
	sc, rec := newTestScanner(link)
	mustScan(t, sc, t0, "default/web-node1:v1", true)
	mustDo(t, os.Remove(target))
	mustScan(t, sc, t0.Add(time.Second), "default/web-node1:v1", false)
	mustScan(t, sc, t0.Add(time.Second+2*settle), "default/web-node1:v1", false)
	if p := rec.list(); len(p) != 1 || p[0].Reason != kubetypes.ReasonFailedToRead || p[0].Where != link {
		t.Fatalf("problems %v, want one FailedToRead about %s", p, link)
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestScanUnreadablePathAtStartSendsNothing: before the first good read,
// only a missing path is an empty source; a path that exists but cannot be
// read leaves the source unseen (no snapshot), is reported, and is read
// once it can be. Root reads everything whatever the permissions, so the
// faults here are ones that fail for root too: a path component that is a
// regular file (ENOTDIR), a symbolic link loop (ELOOP), a link to nothing.
func TestScanUnreadablePathAtStartSendsNothing(t *testing.T) {
	tests := []struct {
		name string
		// setup makes path unreadable inside root.
		setup    func(t *testing.T, root, path string)
		wantSeen bool
	}{
		{"missing", func(t *testing.T, root, path string) {}, true},
		{"a component is a regular file (ENOTDIR)", func(t *testing.T, root, path string) {
			write(t, filepath.Dir(path), "a file, not a directory")
		}, false},
		{"a symbolic link loop (ELOOP)", func(t *testing.T, root, path string) {
			mustDo(t, os.MkdirAll(filepath.Dir(path), 0o755))
			mustDo(t, os.Symlink(path, path))
		}, false},
		{"a link to nothing", func(t *testing.T, root, path string) {
			mustDo(t, os.MkdirAll(filepath.Dir(path), 0o755))
			mustDo(t, os.Symlink(filepath.Join(root, "nowhere"), path))
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			path := filepath.Join(root, "etc", "manifests")
			tc.setup(t, root, path)
			sc, rec := newTestScanner(path)
			pods, changed, _ := sc.scan(t0)
			if seen := changed && pods != nil; seen != tc.wantSeen || len(pods) != 0 {
				t.Fatalf("first scan: pods %q changed %v, want seen %v with no pods", names(pods), changed, tc.wantSeen)
			}
			if p := rec.list(); len(p) != 1 || p[0].Reason != kubetypes.ReasonFailedToRead || p[0].Where != path {
				t.Fatalf("problems %v, want one FailedToRead about %s", p, path)
			}
			if _, changed, _ := sc.scan(t0.Add(time.Second)); changed {
				t.Fatal("the second scan of the same fault changed something")
			}

			mustDo(t, os.RemoveAll(filepath.Join(root, "etc")))
			write(t, filepath.Join(path, "web.yaml"), manifestYAML("web", "v1"))
			mustScan(t, sc, t0.Add(2*time.Second), "default/web-node1:v1", true)
		})
	}
}

// TestScanAfterRestartBadManifestKeepsRunningPod: after an agent restart
// (a new scanner over the same StateDir), a manifest that exists but is
// bad (a typo) or unreadable (a symbolic link whose target went) keeps, in
// the first snapshot already, the pod that ran from it, with its UID, and
// is reported naming the file; a manifest really gone removes its pod
// once the settle period passed, and its record with it.
func TestScanAfterRestartBadManifestKeepsRunningPod(t *testing.T) {
	for _, fault := range []string{"typo", "dangling link", "gone"} {
		t.Run(fault, func(t *testing.T) {
			dir, state := t.TempDir(), t.TempDir()
			target := filepath.Join(t.TempDir(), "web.yaml")
			write(t, target, manifestYAML("web", "v1"))
			manifest := filepath.Join(dir, "web.yaml")
			if err := os.Symlink(target, manifest); err != nil {
				t.Fatal(err)
			}
			opts := Options{Path: dir, NodeName: nodeName, SettlePeriod: settle, StateDir: state}
			before := newScanner(opts, (&recorder{}).ReportProblem)
			running := mustScan(t, before, t0, "default/web-node1:v1", true)[0]

			// The agent stops; the manifest breaks; the agent starts again.
			switch fault {
			case "typo":
				write(t, target, strings.Replace(manifestYAML("web", "v1"), "containers:", "containers", 1))
			case "dangling link":
				os.Remove(target)
			case "gone":
				os.Remove(manifest)
			}
			rec := &recorder{}
			after := newScanner(opts, rec.ReportProblem)
			if fault == "gone" {
				mustScan(t, after, t0.Add(time.Minute), "default/web-node1:v1", true)
				mustScan(t, after, t0.Add(time.Minute+settle), "", true)
				if entries, _ := os.ReadDir(state); len(entries) != 0 {
					t.Errorf("the record of a manifest that is gone stays: %v", entries)
				}
				return
			}
			pods := mustScan(t, after, t0.Add(time.Minute), "default/web-node1:v1", true)
			if pods[0].UID != running.UID {
				t.Fatalf("kept pod UID %s, want the running pod's %s", pods[0].UID, running.UID)
			}
			mustScan(t, after, t0.Add(time.Minute+settle), "default/web-node1:v1", false)
			p := rec.list()
			if len(p) != 1 || p[0].Where != manifest || !strings.Contains(p[0].Err.Error(), "keeping pod default/web-node1") {
				t.Fatalf("problems %v, want one about %s saying the pod is kept", p, manifest)
			}
			// Fixed: the pod follows the file again.
			os.Remove(manifest)
			write(t, manifest, manifestYAML("web", "v2"))
			mustScan(t, after, t0.Add(2*time.Minute), "default/web-node1:v2", true)
		})
	}
}
