package file

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// lastGood keeps, under Options.StateDir, the last good content of each
// manifest, so that an agent restarted while a manifest is bad or
// unreadable still has the pod that ran from it: the pod's UID is a hash
// of that content, its path and the node, so decoding the kept content
// gives back the very pod that runs. Without a directory it keeps nothing.
type lastGood struct {
	dir string
	// byPath is what the directory holds, read once at the first scan.
	byPath map[string][]byte
}

// lastGoodRecord is one file of the directory.
type lastGoodRecord struct {
	Path string `json:"path"`
	Data []byte `json:"data"`
}

func recordFile(dir, path string) string {
	sum := sha256.Sum256([]byte(path))
	return filepath.Join(dir, hex.EncodeToString(sum[:16])+".json")
}

// load reads the records; one that does not decode is dropped (it was
// being written when the agent stopped: its rename never happened).
func (l *lastGood) load() error {
	l.byPath = map[string][]byte{}
	if l.dir == "" {
		return nil
	}
	entries, err := os.ReadDir(l.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the last good manifests in %s: %w", l.dir, err)
	}
	for _, e := range entries {
		name := filepath.Join(l.dir, e.Name())
		if !strings.HasSuffix(e.Name(), ".json") {
			os.Remove(name) // a temporary file of an interrupted save
			continue
		}
		b, err := os.ReadFile(name)
		var rec lastGoodRecord
		if err == nil {
			err = json.Unmarshal(b, &rec)
		}
		if err != nil || rec.Path == "" || recordFile(l.dir, rec.Path) != name {
			os.Remove(name)
			continue
		}
		l.byPath[rec.Path] = rec.Data
	}
	return nil
}

// save records data as path's last good content, written whole through a
// rename.
func (l *lastGood) save(path string, data []byte) error {
	if l.dir == "" || string(l.byPath[path]) == string(data) {
		return nil
	}
	b, err := json.Marshal(lastGoodRecord{Path: path, Data: data})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return fmt.Errorf("saving the last good version of %s: %w", path, err)
	}
	name := recordFile(l.dir, path)
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("saving the last good version of %s: %w", path, err)
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("saving the last good version of %s: %w", path, err)
	}
	l.byPath[path] = data
	return nil
}

// forget removes path's record: its file is gone, and so is its pod.
func (l *lastGood) forget(path string) error {
	if _, ok := l.byPath[path]; !ok {
		return nil
	}
	delete(l.byPath, path)
	if err := os.Remove(recordFile(l.dir, path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("forgetting the last good version of %s: %w", path, err)
	}
	return nil
}
