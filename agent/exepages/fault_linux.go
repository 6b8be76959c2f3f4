//go:build linux

package exepages

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The userfaultfd ABI (linux/userfaultfd.h); golang.org/x/sys has none of it.
const (
	uffdUserModeOnly    = 1          // UFFD_USER_MODE_ONLY: allowed without privileges
	uffdAPI             = 0xAA       // UFFD_API
	uffdFeatureWPAsync  = 1 << 15    // UFFD_FEATURE_WP_ASYNC (Linux 6.7)
	uffdioAPI           = 0xC018AA3F // _IOWR(0xAA, 0x3F, struct uffdio_api)
	uffdioRegister      = 0xC020AA00 // _IOWR(0xAA, 0x00, struct uffdio_register)
	uffdioRegisterModeW = 1 << 1     // UFFDIO_REGISTER_MODE_WP
)

// noFaultAround switches the kernel's fault-around off for the ranges:
// a page fault there then maps the one page touched instead of its 64 KiB
// neighbourhood. The kernel skips fault-around in a mapping registered with
// a userfaultfd for write protection (mm/memory.c, should_fault_around),
// and it offers no other per-mapping switch (MADV_RANDOM does not do it).
// The registration is asynchronous (UFFD_FEATURE_WP_ASYNC): nothing ever
// waits on the descriptor, and since no page is ever write-protected
// through it and the mappings are read-only, it changes nothing else: a
// read fault is served from the page cache as before. Where the kernel
// refuses (before 6.7, no userfaultfd, a seccomp filter), it returns the
// error and fault-around stays on.
func noFaultAround(rs []Range) error {
	fd, _, errno := unix.Syscall(unix.SYS_USERFAULTFD, uffdUserModeOnly|unix.O_CLOEXEC|unix.O_NONBLOCK, 0, 0)
	if errno != 0 {
		return fmt.Errorf("userfaultfd: %w", errno)
	}
	api := struct{ api, features, ioctls uint64 }{api: uffdAPI, features: uffdFeatureWPAsync}
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, fd, uffdioAPI, uintptr(unsafe.Pointer(&api))); errno != 0 {
		unix.Close(int(fd))
		return fmt.Errorf("userfaultfd API with asynchronous write protection: %w", errno)
	}
	for _, r := range rs {
		reg := struct{ start, len, mode, ioctls uint64 }{start: uint64(r.Start), len: uint64(r.End - r.Start), mode: uffdioRegisterModeW}
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, fd, uffdioRegister, uintptr(unsafe.Pointer(&reg))); errno != 0 {
			unix.Close(int(fd))
			return fmt.Errorf("userfaultfd register %#x-%#x: %w", r.Start, r.End, errno)
		}
	}
	// The descriptor is never closed: closing it would end the
	// registration, which is meant to last as long as the process.
	return nil
}
