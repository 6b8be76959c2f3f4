package volumes

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// testImage writes a one-layer image into the content store blobs (its
// configuration, its manifest and, unless fifo, its layer; with fifo the
// layer is a named pipe, so that its unpack blocks until the test writes
// the layer into it) and returns its image ID and layer.
func testImage(t *testing.T, blobs, file string, fifo bool) (string, []byte) {
	t.Helper()
	tarball := layer(t, tarEntry{name: file, body: "from " + file})
	sum := func(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }
	layerHex := sum(tarball)
	cfg, _ := json.Marshal(map[string]any{"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + layerHex}}})
	cfgHex := sum(cfg)
	mf, _ := json.Marshal(map[string]any{"schemaVersion": 2, "config": map[string]string{"digest": "sha256:" + cfgHex},
		"layers": []map[string]string{{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": "sha256:" + layerHex}}})
	for name, b := range map[string][]byte{cfgHex: cfg, sum(mf): mf} {
		if err := os.WriteFile(filepath.Join(blobs, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if fifo {
		if err := syscall.Mkfifo(filepath.Join(blobs, layerHex), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if err := os.WriteFile(filepath.Join(blobs, layerHex), tarball, 0o644); err != nil {
		t.Fatal(err)
	}
	return "sha256:" + cfgHex, tarball
}

// TestImageVolumeLocks: an image volume's unpack (disk I/O) holds no lock
// that another image's volume or a collection waits for, and two pods of
// the same image unpack it once: the second waits for the first's copy.
func TestImageVolumeLocks(t *testing.T) {
	root := t.TempDir()
	content := filepath.Join(t.TempDir(), "content")
	blobs := filepath.Join(content, "blobs", "sha256")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		t.Fatal(err)
	}
	slowID, slowLayer := testImage(t, blobs, "slow", true)
	fastID, _ := testImage(t, blobs, "fast", false)
	m, err := New(Options{RootDir: root, RunsImages: true})
	if err != nil {
		t.Fatal(err)
	}
	pod := func(uid string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID(uid)}}
	}
	type result struct {
		path string
		err  error
	}
	var wg sync.WaitGroup
	slow := make([]result, 2)
	for i, uid := range []string{"slow-1", "slow-2"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slow[i].path, slow[i].err = m.ImageVolume(pod(uid), "img", slowID, content)
		}()
	}
	// The slow image's unpack is under way (its temporary directory is
	// there) and blocked on its layer.
	deadline := time.Now().Add(30 * time.Second)
	for {
		tmps, _ := filepath.Glob(filepath.Join(root, "image-volumes", ".tmp-*"))
		if len(tmps) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow image's unpack did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Meanwhile another image's volume and a collection go through.
	done := make(chan result, 1)
	go func() {
		var r result
		r.path, r.err = m.ImageVolume(pod("fast"), "img", fastID, content)
		if r.err == nil {
			r.err = m.CollectImageVolumes()
		}
		done <- r
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		if b, err := os.ReadFile(filepath.Join(r.path, "fast")); err != nil || string(b) != "from fast" {
			t.Errorf("fast image's copy: %q, %v", b, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("another image's volume (or the collection) waited for the slow image's unpack")
	}
	if tmps, _ := filepath.Glob(filepath.Join(root, "image-volumes", ".tmp-*")); len(tmps) != 1 {
		t.Fatalf("the collection took the unpack under way's directory: %q", tmps)
	}
	// The layer arrives: both pods get the one copy.
	f, err := os.OpenFile(filepath.Join(blobs, hex.EncodeToString(func() []byte { h := sha256.Sum256(slowLayer); return h[:] }())), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(slowLayer); err != nil {
		t.Fatal(err)
	}
	f.Close()
	wg.Wait()
	for i, r := range slow {
		if r.err != nil {
			t.Fatalf("slow pod %d: %v", i, r.err)
		}
		if r.path != slow[0].path {
			t.Errorf("slow pods have copies %s and %s, want one", slow[0].path, r.path)
		}
		if b, err := os.ReadFile(filepath.Join(r.path, "slow")); err != nil || string(b) != "from slow" {
			t.Errorf("slow image's copy: %q, %v", b, err)
		}
	}
	if tmps, _ := filepath.Glob(filepath.Join(root, "image-volumes", ".tmp-*")); len(tmps) != 0 {
		t.Errorf("left after the unpack: %q", tmps)
	}
	if m.imageLocks.locks != nil && len(m.imageLocks.locks) != 0 {
		t.Errorf("digest locks left: %v", m.imageLocks.locks)
	}
}
