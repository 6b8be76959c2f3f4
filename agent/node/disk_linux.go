package node

import "syscall"

// Disk is the size and the space available to unprivileged users of the
// file system that holds path, in bytes.
func (Host) Disk(path string) (total, available int64) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, 0
	}
	return int64(st.Blocks) * st.Bsize, int64(st.Bavail) * st.Bsize
}

// Inodes is the number of inodes and of free inodes of the file system
// that holds path.
func (Host) Inodes(path string) (total, free int64) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, 0
	}
	return int64(st.Files), int64(st.Ffree)
}
