//go:build !linux

package agent

// hostMemory is the machine's physical memory in bytes, 0 if unknown.
func hostMemory() int64 { return 0 }
