//go:build linux

package exepages

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Release drops this process's resident pages of its executable's
// read-only mappings (see the package comment), after switching the
// kernel's fault-around off for them when faultAround is false, so that
// what faults back in is the pages used, not their neighbourhoods. It
// returns how many bytes of mappings it released; an error from switching
// fault-around off is returned with the pages released all the same.
func Release(faultAround bool) (int, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("release executable pages: %w", err)
	}
	maps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, fmt.Errorf("release executable pages: %w", err)
	}
	rs, err := ReadOnlyMappings(string(maps), exe)
	if err != nil {
		return 0, fmt.Errorf("release executable pages of %s: %w", exe, err)
	}
	var faErr error
	if !faultAround {
		faErr = noFaultAround(rs)
	}
	n := 0
	for _, r := range rs {
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, r.Start, r.End-r.Start, unix.MADV_DONTNEED); errno != 0 {
			return n, errors.Join(faErr, fmt.Errorf("release executable pages of %s at %#x-%#x: %w", exe, r.Start, r.End, errno))
		}
		n += int(r.End - r.Start)
	}
	if faErr != nil {
		return n, fmt.Errorf("fault-around stays on for %s: %w", exe, faErr)
	}
	return n, nil
}
