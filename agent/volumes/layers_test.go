package volumes

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// tarEntry is one entry of a test layer: a directory (name ends in "/"),
// a file (body), a symlink (link) or a hard link (hard).
type tarEntry struct {
	name, body, link, hard string
	mode                   int64
}

func layer(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: 0, Gid: 0}
		switch {
		case strings.HasSuffix(e.name, "/"):
			h.Typeflag = tar.TypeDir
			if h.Mode == 0 {
				h.Mode = 0o755
			}
		case e.link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.link
		case e.hard != "":
			h.Typeflag, h.Linkname = tar.TypeLink, e.hard
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.body))
			if h.Mode == 0 {
				h.Mode = 0o644
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// tree is every path under root, "name" for files (with ":body"),
// "name/" for directories, "name -> target" for symlinks.
func tree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case rel == ".":
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out = append(out, rel+" -> "+target)
		case fi.IsDir():
			out = append(out, rel+"/")
		default:
			b, _ := os.ReadFile(p)
			out = append(out, rel+":"+string(b))
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func TestApplyLayerWhiteouts(t *testing.T) {
	base := []tarEntry{
		{name: "./etc/"}, {name: "./etc/os-release", body: "base"}, {name: "./etc/passwd", body: "root"},
		{name: "./opt/"}, {name: "./opt/a", body: "a"}, {name: "./opt/sub/"}, {name: "./opt/sub/b", body: "b"},
		{name: "./keep", body: "k"}, {name: "./gone/"}, {name: "./gone/x", body: "x"},
	}
	cases := []struct {
		name   string
		layers [][]tarEntry
		want   []string
	}{
		{
			name:   "one layer",
			layers: [][]tarEntry{base},
			want:   []string{"etc/", "etc/os-release:base", "etc/passwd:root", "gone/", "gone/x:x", "keep:k", "opt/", "opt/a:a", "opt/sub/", "opt/sub/b:b"},
		},
		{
			name: "whiteouts delete files and directories of the layers below",
			layers: [][]tarEntry{base, {
				{name: "etc/.wh.passwd"}, {name: ".wh.gone"}, {name: "etc/os-release", body: "upper"},
			}},
			want: []string{"etc/", "etc/os-release:upper", "keep:k", "opt/", "opt/a:a", "opt/sub/", "opt/sub/b:b"},
		},
		{
			name: "an opaque directory keeps only this layer's entries, whatever their order",
			layers: [][]tarEntry{base, {
				{name: "opt/"}, {name: "opt/new", body: "n"}, {name: "opt/.wh..wh..opq"}, {name: "opt/later", body: "l"},
			}},
			want: []string{"etc/", "etc/os-release:base", "etc/passwd:root", "gone/", "gone/x:x", "keep:k", "opt/", "opt/later:l", "opt/new:n"},
		},
		{
			name: "a whiteout of what is not there is nothing",
			layers: [][]tarEntry{base, {
				{name: "etc/.wh.shadow"},
			}},
			want: []string{"etc/", "etc/os-release:base", "etc/passwd:root", "gone/", "gone/x:x", "keep:k", "opt/", "opt/a:a", "opt/sub/", "opt/sub/b:b"},
		},
		{
			name: "a file replaces a directory, a directory a file",
			layers: [][]tarEntry{base, {
				{name: "gone", body: "now a file"}, {name: "keep/"}, {name: "keep/in", body: "i"},
			}},
			want: []string{"etc/", "etc/os-release:base", "etc/passwd:root", "gone:now a file", "keep/", "keep/in:i", "opt/", "opt/a:a", "opt/sub/", "opt/sub/b:b"},
		},
		{
			name: "symlinks and hard links",
			layers: [][]tarEntry{{
				{name: "usr/"}, {name: "usr/lib/"}, {name: "usr/lib/libc", body: "c"}, {name: "lib", link: "usr/lib"},
				{name: "lib/libm", body: "m"}, {name: "hard", hard: "usr/lib/libc"},
			}},
			want: []string{"hard:c", "lib -> usr/lib", "usr/", "usr/lib/", "usr/lib/libc:c", "usr/lib/libm:m"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for _, l := range tc.layers {
				if err := ApplyLayer(root, bytes.NewReader(layer(t, l...))); err != nil {
					t.Fatal(err)
				}
			}
			if got := tree(t, root); !slices.Equal(got, tc.want) {
				t.Errorf("tree:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// A layer cannot write outside the root: not by "..", not through a
// symlink of its own or a lower layer's, absolute or relative, not by a
// hard link to a host file.
func TestApplyLayerStaysInsideTheRoot(t *testing.T) {
	cases := []struct {
		name    string
		entries []tarEntry
		want    []string
	}{
		{"dot-dot", []tarEntry{{name: "../../escape", body: "x"}}, []string{"escape:x"}},
		{"absolute symlink parent", []tarEntry{{name: "etc", link: "/HOST"}, {name: "etc/passwd", body: "x"}},
			[]string{"HOST/", "HOST/passwd:x", "etc -> /HOST"}},
		{"relative symlink parent", []tarEntry{{name: "d/"}, {name: "d/up", link: "../../../HOST"}, {name: "d/up/f", body: "x"}},
			[]string{"HOST/", "HOST/f:x", "d/", "d/up -> ../../../HOST"}},
		{"hard link to a host path", []tarEntry{{name: "h", hard: "../../HOST"}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			outer := t.TempDir()
			root := filepath.Join(outer, "a", "b", "root")
			os.MkdirAll(root, 0o755)
			// A host file the hard-link case names.
			os.WriteFile(filepath.Join(outer, "a", "HOST"), []byte("host"), 0o644)
			err := ApplyLayer(root, bytes.NewReader(layer(t, tc.entries...)))
			if tc.want == nil {
				if err == nil {
					t.Fatalf("applied: %q", tree(t, root))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := tree(t, root); !slices.Equal(got, tc.want) {
				t.Errorf("tree:\n got %q\nwant %q", got, tc.want)
			}
			if got := tree(t, outer); len(got) != 4+len(tc.want) {
				t.Errorf("outside the root: %q", got)
			}
		})
	}
}

func TestApplyLayerModes(t *testing.T) {
	root := t.TempDir()
	if err := ApplyLayer(root, bytes.NewReader(layer(t,
		tarEntry{name: "./", mode: 0o755}, tarEntry{name: "bin/", mode: 0o711}, tarEntry{name: "bin/su", body: "su", mode: 0o4755},
		tarEntry{name: "tmp/", mode: 0o1777}))); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{"bin": os.ModeDir | 0o711, "bin/su": os.ModeSetuid | 0o755, "tmp": os.ModeDir | os.ModeSticky | 0o777, ".": os.ModeDir | 0o755} {
		fi, err := os.Stat(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want)
		}
	}
}

func TestRootPath(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "usr", "lib"), 0o755)
	os.Symlink("usr/lib", filepath.Join(root, "lib"))
	os.Symlink("/usr", filepath.Join(root, "abs"))
	os.Symlink("../../..", filepath.Join(root, "usr", "up"))
	os.Symlink("loop", filepath.Join(root, "loop"))
	for name, want := range map[string]string{
		"lib/x":      "usr/lib/x",
		"abs/lib":    "usr/lib",
		"usr/up/etc": "etc",
		"../../etc":  "etc",
		"":           "",
		"missing/a":  "missing/a",
	} {
		got, err := RootPath(root, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := filepath.Join(root, want); got != want {
			t.Errorf("RootPath(%q) = %s, want %s", name, got, want)
		}
	}
	if _, err := RootPath(root, "loop/x"); err == nil {
		t.Error("a symlink loop resolved")
	}
}

func TestManifestLayers(t *testing.T) {
	id := "sha256:" + strings.Repeat("c", 64)
	oci := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"digest":"` + id + `"},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:aa"}]}`
	cases := []struct {
		name string
		blob string
		n    int
		ok   bool
	}{
		{"the image's manifest", oci, 1, true},
		{"another image's", strings.Replace(oci, id, "sha256:"+strings.Repeat("d", 64), 1), 1, false},
		{"not the configuration's layer count", oci, 2, false},
		{"an index", `{"schemaVersion":2,"manifests":[{"digest":"sha256:aa"}]}`, 0, false},
		{"a layer", "\x1f\x8b...", 1, false},
		{"the configuration itself", `{"architecture":"amd64","rootfs":{"diff_ids":["sha256:aa"]}}`, 1, false},
	}
	for _, tc := range cases {
		layers, ok := ManifestLayers([]byte(tc.blob), id, tc.n)
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.name, ok, tc.ok)
		}
		if ok && (len(layers) != 1 || layers[0].Digest != "sha256:aa") {
			t.Errorf("%s: layers %v", tc.name, layers)
		}
	}
}

func TestDecompress(t *testing.T) {
	body := []byte("a tar, as far as this test cares")
	var gz, zs bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write(body)
	w.Close()
	zw, _ := zstd.NewWriter(&zs)
	zw.Write(body)
	zw.Close()
	for mt, in := range map[string][]byte{
		"application/vnd.oci.image.layer.v1.tar":                    body,
		"application/vnd.oci.image.layer.v1.tar+gzip":               gz.Bytes(),
		"application/vnd.oci.image.layer.v1.tar+zstd":               zs.Bytes(),
		"application/vnd.docker.image.rootfs.diff.tar.gzip":         gz.Bytes(),
		"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip": gz.Bytes(),
	} {
		r, err := Decompress(mt, bytes.NewReader(in))
		if err != nil {
			t.Fatalf("%s: %v", mt, err)
		}
		got, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(got, body) {
			t.Errorf("%s: %q, %v", mt, got, err)
		}
	}
	for _, mt := range []string{"application/vnd.oci.image.layer.v1.tar+gzip+encrypted", "application/x-unknown"} {
		if _, err := Decompress(mt, bytes.NewReader(body)); err == nil {
			t.Errorf("%s: no error", mt)
		}
	}
}

func TestUnusedImageCopies(t *testing.T) {
	a, b, c := strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64)
	cases := []struct {
		name    string
		entries []string
		inUse   map[string]bool
		want    []string
	}{
		{"nothing", nil, nil, nil},
		{"every copy in use stays", []string{a, b}, map[string]bool{a: true, b: true}, nil},
		{"a copy no pod links to goes", []string{a, b, c}, map[string]bool{b: true}, []string{a, c}},
		{"no pod at all: every copy goes", []string{a}, map[string]bool{}, []string{a}},
		{"an unpack's leftovers go, in use or not", []string{".tmp-" + a + "-123", a}, map[string]bool{a: true, ".tmp-" + a + "-123": true}, []string{".tmp-" + a + "-123"}},
		{"a link to a copy that is gone changes nothing", []string{a}, map[string]bool{a: true, c: true}, nil},
	}
	for _, tc := range cases {
		if got := UnusedImageCopies(tc.entries, tc.inUse); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The process runtime refuses image volumes with a message that says
// why; a runtime that runs images leaves them to the pod's start
// (ImageVolume) and sets up the pod's other volumes.
func TestSetUpOfImageVolumes(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1"}, Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "img", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "busybox"}}},
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
	}}}
	m, err := New(Options{RootDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.SetUp(t.Context(), pod)
	if !errors.Is(err, ErrImageVolumeUnsupported) || !strings.Contains(err.Error(), `MountVolume.SetUp failed for volume "img"`) {
		t.Errorf("process runtime: %v, want the image volume refused", err)
	}
	m, err = New(Options{RootDir: t.TempDir(), RunsImages: true})
	if err != nil {
		t.Fatal(err)
	}
	paths, err := m.SetUp(t.Context(), pod)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := paths["img"]; ok || paths["scratch"] == "" {
		t.Errorf("paths %v: want scratch only", paths)
	}
}
