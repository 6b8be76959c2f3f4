package imagegc

import (
	"fmt"
	"syscall"
)

// statfs is the capacity and the space available to unprivileged users
// of the file system holding path, as cadvisor's GetDirFsInfo gives the
// kubelet.
func statfs(path string) (Usage, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return Usage{}, fmt.Errorf("imagegc: statfs %s: %w", path, err)
	}
	return Usage{Capacity: st.Blocks * uint64(st.Bsize), Available: st.Bavail * uint64(st.Bsize)}, nil
}
