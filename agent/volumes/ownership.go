package volumes

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Masks of upstream's volume ownership (pkg/volume/volume_linux.go).
const (
	rwMask   = os.FileMode(0o660)
	roMask   = os.FileMode(0o440)
	execMask = os.FileMode(0o110)
)

// setOwnership gives the volume at dir to the pod's fsGroup, as
// upstream's SetVolumeOwnership does for every volume that supports it
// (emptyDir and the content volumes; hostPath does not): every file and
// directory gets the group, files the group (and owner) read bits (and
// write bits unless readOnly), directories also the search bits and
// setgid, so that what is created in them keeps the group. Symbolic links
// are given the group, never followed. No fsGroup: nothing changes.
func setOwnership(dir string, fsGroup *int64, readOnly bool) error {
	if fsGroup == nil {
		return nil
	}
	mask := rwMask
	if readOnly {
		mask = roMask
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, -1, int(*fsGroup)); err != nil {
			return fmt.Errorf("fsGroup %d on %s: %w", *fsGroup, path, err)
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		m := mask
		if info.IsDir() {
			m |= os.ModeSetgid | execMask
		}
		if err := os.Chmod(path, info.Mode()|m); err != nil {
			return fmt.Errorf("fsGroup %d on %s: %w", *fsGroup, path, err)
		}
		return nil
	})
}
