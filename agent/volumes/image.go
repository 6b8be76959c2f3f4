package volumes

import (
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Image volumes (spec.volumes[].image, KEP-4639). The kubelet hands the
// pulled image to the runtime as a CRI Mount with Image set, and
// containerd 2.1 or later mounts the image's root read-only; containerd
// 1.6 (Debian's) ignores that field. So the agent makes the image's file
// system itself, for every runtime: the layers of the image, read from
// containerd's content store, applied with their whiteouts into a copy
// under <root>/image-volumes/<digest> (one per image ID, shared by every
// pod that mounts it), bound read-only into the container as any other
// volume. A pod's use of a copy is a symlink under its own directory,
// <pod dir>/volumes/kubernetes.io~image/<volume>/<digest>, so it outlives
// an agent restart; a copy that no pod directory links to is removed
// when a pod's directory is (RemovePodDir) and when the agent starts
// (Run). See docs/runtime.md.

// PluginImage is the plugin directory of image volumes under a pod's
// volumes directory.
const PluginImage = "kubernetes.io~image"

// ErrImageVolumeUnsupported is the error of an image volume on a runtime
// that runs no images (the process runtime).
var ErrImageVolumeUnsupported = errors.New("image volumes need a runtime that runs images (--container-runtime=containerd); the process runtime runs host commands and has no image to mount")

// maxManifestSize bounds the blobs read as candidate manifests: a
// manifest is a few KiB; layers are not read.
const maxManifestSize = 4 << 20

// imageCopiesDir holds the unpacked copies.
func (m *Manager) imageCopiesDir() string { return filepath.Join(m.opts.RootDir, "image-volumes") }

// ImageVolume is the host path of pod's image volume vol: the read-only
// copy of image imageID (the runtime's image ID, "sha256:<hex>"),
// unpacked from the content store at contentDir (containerd's
// io.containerd.content.v1.content) when there is none yet, and linked
// from the pod's directory as in use.
func (m *Manager) ImageVolume(pod *v1.Pod, vol, imageID, contentDir string) (string, error) {
	hexID, ok := strings.CutPrefix(imageID, "sha256:")
	if !ok || len(hexID) != 64 || strings.ContainsAny(hexID, "/.") {
		return "", fmt.Errorf("image volume %q: image ID %q is not a sha256 digest", vol, imageID)
	}
	// Two pods of the same image wait here for one unpack; pods of
	// other images unpack theirs meanwhile.
	unlock := m.imageLocks.lock(hexID)
	defer unlock()
	dir := filepath.Join(m.imageCopiesDir(), hexID)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := m.unpackImage(contentDir, imageID, dir); err != nil {
			return "", fmt.Errorf("image volume %q: %w", vol, err)
		}
	} else if err != nil {
		return "", fmt.Errorf("image volume %q: %w", vol, err)
	}
	link := filepath.Join(m.PodDir(pod), "volumes", PluginImage, vol, hexID)
	if err := os.MkdirAll(filepath.Dir(link), 0o750); err != nil {
		return "", fmt.Errorf("image volume %q: %w", vol, err)
	}
	if err := os.Symlink(dir, link); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("image volume %q: %w", vol, err)
	}
	return dir, nil
}

// unpackImage applies the layers of image imageID, found in the content
// store at contentDir, into dest: into a temporary directory beside it,
// renamed to dest when whole.
func (m *Manager) unpackImage(contentDir, imageID, dest string) error {
	blobs := filepath.Join(contentDir, "blobs", "sha256")
	cfgBlob, err := os.ReadFile(filepath.Join(blobs, strings.TrimPrefix(imageID, "sha256:")))
	if err != nil {
		return fmt.Errorf("configuration of image %s in the content store: %w", imageID, err)
	}
	var cfg struct {
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	if err := json.Unmarshal(cfgBlob, &cfg); err != nil {
		return fmt.Errorf("configuration of image %s: %w", imageID, err)
	}
	candidates, err := manifestsOf(blobs, imageID, len(cfg.RootFS.DiffIDs))
	if err != nil {
		return err
	}
	if len(candidates) == 0 {
		return fmt.Errorf("no manifest of image %s in the content store %s", imageID, contentDir)
	}
	if err := os.MkdirAll(filepath.Dir(dest), DirMode); err != nil {
		return err
	}
	var errs []error
	for _, layers := range candidates {
		tmp, err := os.MkdirTemp(filepath.Dir(dest), ".tmp-"+filepath.Base(dest)+"-")
		if err != nil {
			return err
		}
		if err := os.Chmod(tmp, 0o755); err != nil {
			return err
		}
		err = applyLayers(tmp, blobs, layers, cfg.RootFS.DiffIDs)
		if err == nil {
			return os.Rename(tmp, dest)
		}
		errs = append(errs, err)
		os.RemoveAll(tmp)
	}
	return fmt.Errorf("unpack image %s: %w", imageID, errors.Join(errs...))
}

// descriptor is an OCI (or docker schema 2) content descriptor.
type descriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
}

// manifestsOf are the layer lists of the manifests in blobs whose
// configuration is imageID and that have n layers (the configuration's
// diff IDs): an image imported from an archive has no repo digest that
// would name its manifest, so the content store's small blobs are read
// for it. More than one is possible (the same image with layers
// compressed differently); any whose layers are all there will do.
func manifestsOf(blobs, imageID string, n int) ([][]descriptor, error) {
	entries, err := os.ReadDir(blobs)
	if err != nil {
		return nil, fmt.Errorf("content store: %w", err)
	}
	var out [][]descriptor
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxManifestSize {
			continue
		}
		b, err := os.ReadFile(filepath.Join(blobs, e.Name()))
		if err != nil {
			continue
		}
		if layers, ok := ManifestLayers(b, imageID, n); ok {
			out = append(out, layers)
		}
	}
	return out, nil
}

// ManifestLayers are the layers of manifest b when it is an image
// manifest (OCI or docker schema 2) whose configuration is imageID, with
// n layers.
func ManifestLayers(b []byte, imageID string, n int) ([]descriptor, bool) {
	if len(b) == 0 || b[0] != '{' {
		return nil, false
	}
	var mf struct {
		SchemaVersion int          `json:"schemaVersion"`
		Config        descriptor   `json:"config"`
		Layers        []descriptor `json:"layers"`
	}
	if json.Unmarshal(b, &mf) != nil || mf.SchemaVersion != 2 || mf.Config.Digest != imageID || len(mf.Layers) != n {
		return nil, false
	}
	return mf.Layers, true
}

// applyLayers applies each layer in order onto dir, checking that each
// uncompressed is its diff ID.
func applyLayers(dir, blobs string, layers []descriptor, diffIDs []string) error {
	for i, l := range layers {
		if err := applyBlob(dir, blobs, l, diffIDs[i]); err != nil {
			return fmt.Errorf("layer %s: %w", l.Digest, err)
		}
	}
	return nil
}

func applyBlob(dir, blobs string, l descriptor, diffID string) error {
	hexDigest, ok := strings.CutPrefix(l.Digest, "sha256:")
	if !ok || strings.ContainsAny(hexDigest, "/.") {
		return fmt.Errorf("digest %q is not sha256", l.Digest)
	}
	f, err := os.Open(filepath.Join(blobs, hexDigest))
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := Decompress(l.MediaType, f)
	if err != nil {
		return err
	}
	defer r.Close()
	h := sha256.New()
	tee := io.TeeReader(r, h)
	if err := ApplyLayer(dir, tee); err != nil {
		return err
	}
	// The tar's end-of-archive padding counts in the diff ID.
	if _, err := io.Copy(io.Discard, tee); err != nil {
		return err
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != diffID {
		return fmt.Errorf("uncompressed digest %s, the image's diff ID is %s", got, diffID)
	}
	return nil
}

// Decompress is a layer's tar stream by its media type: uncompressed,
// gzip or zstd (OCI's and docker's layer types; foreign and
// non-distributable layers are tars too). Any other (encrypted layers) is
// an error.
func Decompress(mediaType string, r io.Reader) (io.ReadCloser, error) {
	switch {
	case strings.HasSuffix(mediaType, "+encrypted"):
		return nil, fmt.Errorf("layer media type %q: encrypted layers are not supported", mediaType)
	case strings.HasSuffix(mediaType, "+gzip"), strings.HasSuffix(mediaType, ".tar.gzip"):
		return gzip.NewReader(r)
	case strings.HasSuffix(mediaType, "+zstd"):
		d, err := zstd.NewReader(r)
		if err != nil {
			return nil, err
		}
		return d.IOReadCloser(), nil
	case strings.HasSuffix(mediaType, ".tar"), strings.HasSuffix(mediaType, "tar.diff"), mediaType == "":
		return io.NopCloser(r), nil
	}
	return nil, fmt.Errorf("layer media type %q is not supported", mediaType)
}

// UnusedImageCopies are the entries of the copies directory to remove:
// the copies (by digest) that no pod links to, and the temporary
// directories an unpack left (none is under way when this is decided).
func UnusedImageCopies(entries []string, inUse map[string]bool) []string {
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e, ".tmp-") || !inUse[e] {
			out = append(out, e)
		}
	}
	return out
}

// CollectImageVolumes removes the copies no pod directory links to. The
// candidates are decided without a lock; each is then removed under its
// digest's lock after a second look at its links, so that a copy an
// ImageVolume call unpacked or linked meanwhile stays, and a temporary
// directory of an unpack under way is not taken from under it.
func (m *Manager) CollectImageVolumes() error {
	entries, err := os.ReadDir(m.imageCopiesDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("image volumes: %w", err)
	}
	if len(entries) == 0 {
		return nil
	}
	inUse, err := m.imageCopiesInUse("*")
	if err != nil {
		return err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	var errs []error
	for _, name := range UnusedImageCopies(names, inUse) {
		if err := m.removeImageCopy(name); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("image volumes: %w", errors.Join(errs...))
	}
	return nil
}

// imageCopiesInUse are the digests of the copies the pods' image volume
// links (<pod dir>/volumes/kubernetes.io~image/<volume>/<digest>) point to,
// of the links named digest (a glob pattern).
func (m *Manager) imageCopiesInUse(digest string) (map[string]bool, error) {
	links, err := filepath.Glob(filepath.Join(m.opts.RootDir, "pods", "*", "volumes", PluginImage, "*", digest))
	if err != nil {
		return nil, fmt.Errorf("image volumes: %w", err)
	}
	inUse := map[string]bool{}
	for _, l := range links {
		if target, err := os.Readlink(l); err == nil {
			inUse[filepath.Base(target)] = true
		}
	}
	return inUse, nil
}

// removeImageCopy removes an entry of the copies directory under its
// digest's lock (a temporary directory, .tmp-<digest>-*, is its
// digest's), when no link names it still. A digest whose lock is held is
// being unpacked or linked: its entries stay, and the collection does not
// wait for it.
func (m *Manager) removeImageCopy(name string) error {
	digest := name
	if rest, ok := strings.CutPrefix(name, ".tmp-"); ok {
		digest, _, _ = strings.Cut(rest, "-")
	}
	unlock, ok := m.imageLocks.tryLock(digest)
	if !ok {
		return nil
	}
	defer unlock()
	if !strings.HasPrefix(name, ".tmp-") {
		inUse, err := m.imageCopiesInUse(digest)
		if err != nil {
			return err
		}
		if inUse[digest] {
			return nil
		}
	}
	return os.RemoveAll(filepath.Join(m.imageCopiesDir(), name))
}

// digestLocks are a lock per image digest, made when first asked for and
// dropped when no one holds or waits for it. mu guards the map only and
// is never held across I/O.
type digestLocks struct {
	mu    sync.Mutex
	locks map[string]*digestLock
}

type digestLock struct {
	sync.Mutex
	refs int // holders and waiters; guarded by digestLocks.mu
}

// lock locks digest's lock and returns its unlock.
func (d *digestLocks) lock(digest string) (unlock func()) {
	l := d.ref(digest)
	l.Lock()
	return func() {
		l.Unlock()
		d.unref(digest, l)
	}
}

// tryLock locks digest's lock if no one holds it.
func (d *digestLocks) tryLock(digest string) (unlock func(), ok bool) {
	l := d.ref(digest)
	if !l.TryLock() {
		d.unref(digest, l)
		return nil, false
	}
	return func() {
		l.Unlock()
		d.unref(digest, l)
	}, true
}

// ref is digest's lock, made if none, counted as held or waited for.
func (d *digestLocks) ref(digest string) *digestLock {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.locks == nil {
		d.locks = map[string]*digestLock{}
	}
	l := d.locks[digest]
	if l == nil {
		l = &digestLock{}
		d.locks[digest] = l
	}
	l.refs++
	return l
}

// unref drops a ref of digest's lock l, and the lock with the last.
func (d *digestLocks) unref(digest string, l *digestLock) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if l.refs--; l.refs == 0 {
		delete(d.locks, digest)
	}
}

// imageVolumeMounts makes the mounts of pod's image volumes in cfg
// read-only, as the kubelet's image volume mounter says (the runtime
// mounts an image read-only), and points a mount with a subPath at that
// path inside the copy, resolved inside it: it must exist (the image's
// files are never made).
func imageVolumeMounts(pod *v1.Pod, c *v1.Container, volumes map[string]string, cfg *runtimeapi.ContainerConfig) error {
	images := map[string]bool{}
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Image != nil {
			images[pod.Spec.Volumes[i].Name] = true
		}
	}
	if len(images) == 0 {
		return nil
	}
	for i, vm := range c.VolumeMounts {
		if !images[vm.Name] || i >= len(cfg.Mounts) || cfg.Mounts[i].ContainerPath != vm.MountPath {
			continue
		}
		mount := cfg.Mounts[i]
		mount.Readonly = true
		root := volumes[vm.Name]
		if mount.HostPath == root {
			continue
		}
		rel, err := filepath.Rel(root, mount.HostPath)
		if err != nil {
			return fmt.Errorf("subPath of image volume %q: %w", vm.Name, err)
		}
		p, err := RootPath(root, filepath.ToSlash(rel))
		if err != nil {
			return fmt.Errorf("subPath %q of image volume %q: %w", rel, vm.Name, err)
		}
		if _, err := os.Stat(p); err != nil {
			// Not the host path: the message reaches the pod's status.
			return fmt.Errorf("subPath %q of image volume %q: no such file or directory in the image", rel, vm.Name)
		}
		mount.HostPath = p
	}
	return nil
}
