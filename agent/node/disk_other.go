//go:build !linux

package node

// Disk is not measured off Linux.
func (Host) Disk(string) (total, available int64) { return 0, 0 }

func (Host) Inodes(string) (total, free int64) { return 0, 0 }
