package volumes

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kite-project/kite/agent/containerconfig"
)

// writeAtomic makes dir hold exactly files, switching to the new content in
// one rename, as upstream's AtomicWriter: the files live in a timestamped
// directory that the symlink ..data points to, and each top-level name is a
// symlink through ..data, so a reader sees either the old or the new set.
func writeAtomic(dir string, files map[string]containerconfig.File) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for p := range files {
		if filepath.IsAbs(p) || strings.HasPrefix(filepath.Clean(p), "..") {
			return fmt.Errorf("invalid path %q: must be relative and may not contain '..'", p)
		}
	}
	ts, err := os.MkdirTemp(dir, ".."+time.Now().UTC().Format("2006_01_02_15_04_05."))
	if err != nil {
		return err
	}
	for p, f := range files {
		full := filepath.Join(ts, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, f.Data, f.Mode); err != nil {
			return err
		}
		if err := os.Chmod(full, f.Mode); err != nil {
			return err
		}
	}
	if err := os.Chmod(ts, 0o755); err != nil {
		return err
	}
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	tmp := filepath.Join(dir, "..data_tmp")
	os.Remove(tmp)
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		return err
	}
	top := map[string]bool{}
	for p := range files {
		top[strings.Split(filepath.ToSlash(filepath.Clean(p)), "/")[0]] = true
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, "..") || top[n] {
			continue
		}
		os.Remove(filepath.Join(dir, n)) // a name the new content no longer has
	}
	names := make([]string, 0, len(top))
	for n := range top {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		link := filepath.Join(dir, n)
		if target, err := os.Readlink(link); err == nil && target == filepath.Join("..data", n) {
			continue
		}
		os.Remove(link)
		if err := os.Symlink(filepath.Join("..data", n), link); err != nil {
			return err
		}
	}
	if old != "" && old != filepath.Base(ts) {
		os.RemoveAll(filepath.Join(dir, old))
	}
	return nil
}
