package volumes

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// OCI whiteouts (image-spec layer.md): an entry .wh.<name> deletes <name>
// of the layers below; .wh..wh..opq in a directory hides everything the
// layers below put in it.
const (
	whiteoutPrefix = ".wh."
	whiteoutOpaque = ".wh..wh..opq"
)

// ApplyLayer applies one uncompressed layer tar onto root, as containerd's
// tar applier: entries are created with their modes, owners and times,
// whiteouts delete what layers below made, an opaque whiteout empties its
// directory of them, and nothing is ever written outside root (names are
// cleaned of "..", and symlinks met on the way, a layer's own or a lower
// one's, are resolved inside root: an image cannot reach the host). Extended
// attributes are not applied.
func ApplyLayer(root string, r io.Reader) error {
	tr := tar.NewReader(r)
	// Paths this layer made: an opaque whiteout keeps them, whatever the
	// order of its entries.
	made := map[string]bool{}
	type dirTime struct {
		path  string
		mtime time.Time
	}
	var dirs []dirTime
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("layer: %w", err)
		}
		name := cleanName(hdr.Name)
		if name == "" {
			// The root itself: its mode and owner.
			if hdr.Typeflag == tar.TypeDir {
				if err := attrs(root, hdr); err != nil {
					return err
				}
				dirs = append(dirs, dirTime{root, hdr.ModTime})
			}
			continue
		}
		dir, base := path.Split(name)
		parent, err := RootPath(root, dir)
		if err != nil {
			return fmt.Errorf("layer entry %q: %w", hdr.Name, err)
		}
		if base == whiteoutOpaque {
			if err := opaque(parent, path.Clean(dir), made); err != nil {
				return fmt.Errorf("layer entry %q: %w", hdr.Name, err)
			}
			continue
		}
		if target, ok := strings.CutPrefix(base, whiteoutPrefix); ok {
			if err := os.RemoveAll(filepath.Join(parent, target)); err != nil {
				return fmt.Errorf("layer entry %q: %w", hdr.Name, err)
			}
			continue
		}
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return fmt.Errorf("layer entry %q: %w", hdr.Name, err)
		}
		p := filepath.Join(parent, base)
		made[name] = true
		if err := entry(root, p, hdr, tr); err != nil {
			return fmt.Errorf("layer entry %q: %w", hdr.Name, err)
		}
		if hdr.Typeflag == tar.TypeDir {
			dirs = append(dirs, dirTime{p, hdr.ModTime})
		}
	}
	// A directory's time last: creating its entries changed it.
	for _, d := range dirs {
		// One the layer itself replaced later is gone.
		if err := os.Chtimes(d.path, d.mtime, d.mtime); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("layer: %w", err)
		}
	}
	return nil
}

// cleanName is a tar entry's name relative to the root, without "./",
// a leading "/" or any ".." above the root; "" is the root.
func cleanName(name string) string {
	n := path.Clean("/" + name)
	return strings.TrimPrefix(n, "/")
}

// opaque removes from dir (at host path p) every entry a lower layer made:
// what this layer made there (made, by name) stays.
func opaque(p, dir string, made map[string]bool) error {
	entries, err := os.ReadDir(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if made[path.Join(dir, e.Name())] {
			continue
		}
		if err := os.RemoveAll(filepath.Join(p, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// entry makes one entry at p: what was there is replaced, but a
// directory stays a directory (a later layer changes its attributes only).
func entry(root, p string, hdr *tar.Header, r io.Reader) error {
	if fi, err := os.Lstat(p); err == nil && !(fi.IsDir() && hdr.Typeflag == tar.TypeDir) {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	case tar.TypeReg:
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, r)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	case tar.TypeSymlink:
		// The target is kept as it is: it is read in the container.
		return errors.Join(os.Symlink(hdr.Linkname, p), lchown(p, hdr))
	case tar.TypeLink:
		// The link's target is the entry of that name itself (a symlink
		// stays one); the directories above it are resolved inside root.
		ldir, lbase := path.Split(cleanName(hdr.Linkname))
		if lbase == "" {
			return fmt.Errorf("hard link to the root")
		}
		tdir, err := RootPath(root, ldir)
		if err != nil {
			return err
		}
		// A hard link shares its target's inode, attributes and all.
		return os.Link(filepath.Join(tdir, lbase), p)
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		mode := uint32(hdr.Mode & 0o7777)
		switch hdr.Typeflag {
		case tar.TypeChar:
			mode |= unix.S_IFCHR
		case tar.TypeBlock:
			mode |= unix.S_IFBLK
		default:
			mode |= unix.S_IFIFO
		}
		if err := unix.Mknod(p, mode, int(unix.Mkdev(uint32(hdr.Devmajor), uint32(hdr.Devminor)))); err != nil {
			return err
		}
	case tar.TypeXGlobalHeader:
		return nil
	default:
		return fmt.Errorf("unsupported tar entry type %q", hdr.Typeflag)
	}
	if err := attrs(p, hdr); err != nil {
		return err
	}
	return os.Chtimes(p, hdr.AccessTime, hdr.ModTime)
}

// attrs gives p the entry's owner and mode (setuid, setgid and sticky
// too: chmod after chown, which clears them).
func attrs(p string, hdr *tar.Header) error {
	if err := lchown(p, hdr); err != nil {
		return err
	}
	return os.Chmod(p, tarMode(hdr.Mode))
}

func lchown(p string, hdr *tar.Header) error {
	if err := os.Lchown(p, hdr.Uid, hdr.Gid); err != nil && !errors.Is(err, os.ErrPermission) {
		return err
	}
	return nil
}

// tarMode is a tar header's permission bits as an os.FileMode.
func tarMode(m int64) os.FileMode {
	mode := os.FileMode(m & 0o777)
	if m&0o4000 != 0 {
		mode |= os.ModeSetuid
	}
	if m&0o2000 != 0 {
		mode |= os.ModeSetgid
	}
	if m&0o1000 != 0 {
		mode |= os.ModeSticky
	}
	return mode
}

// maxLinks bounds the symlinks RootPath follows, as the kernel's 40.
const maxLinks = 40

// RootPath is the host path of name (slash-separated, relative to root)
// with every symlink on the way resolved as it would be with root as "/":
// an absolute target starts again at root and ".." stops at root, so the
// result is always inside root (containerd's fs.RootPath, securejoin's
// SecureJoin). The last element is resolved too when it is a symlink; a
// path that does not exist (yet) is joined as it is.
func RootPath(root, name string) (string, error) {
	rest := strings.Split(cleanName(name), "/")
	var done []string // resolved elements below root
	links := 0
	for len(rest) > 0 {
		elem := rest[0]
		rest = rest[1:]
		switch elem {
		case "", ".":
			continue
		case "..":
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			continue
		}
		p := filepath.Join(root, filepath.Join(done...), elem)
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			done = append(done, elem)
			continue
		}
		links++
		if links > maxLinks {
			return "", fmt.Errorf("%s: too many levels of symbolic links", name)
		}
		target, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if strings.HasPrefix(target, "/") {
			done = nil
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return filepath.Join(append([]string{root}, done...)...), nil
}
