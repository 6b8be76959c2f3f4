//go:build linux

package exepages

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rssFileKiB is this process's RssFile from /proc/self/status.
func rssFileKiB(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "RssFile:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

// The test binary's own executable pages leave its resident set, its data
// is untouched, and the code still runs (its pages fault back in).
func TestReleaseDropsTheExecutablesResidentPages(t *testing.T) {
	// Data written in the executable's writable mapping (an initialised
	// array lives in .noptrdata, a private file mapping) must survive:
	// MADV_DONTNEED there would bring back the file's "init".
	copy(marker[:], "kept")
	before := rssFileKiB(t)
	n, err := Release(true)
	if err != nil {
		t.Fatal(err)
	}
	after := rssFileKiB(t)
	t.Logf("advised %d KiB of mappings; RssFile %d -> %d KiB", n/1024, before, after)
	if n == 0 {
		t.Fatal("no mapping of the executable was advised")
	}
	// A test binary has its few MiB of code almost all resident by now;
	// what the runtime, the testing package and this test touch again comes
	// back at once (a third to two thirds here), the rest must be gone.
	if after > before*3/4 {
		t.Errorf("RssFile %d KiB after Release, %d KiB before: want at most three quarters", after, before)
	}
	if string(marker[:]) != "kept" {
		t.Errorf("data in the executable's writable mapping changed: %q", marker)
	}
	// The code that was dropped runs again: parse this process's maps.
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Readlink("/proc/self/exe")
	if rs, err := ReadOnlyMappings(string(maps), exe); err != nil || len(rs) == 0 {
		t.Errorf("ReadOnlyMappings after Release: %v, %v", rs, err)
	}
}

// sink keeps the compiler from dropping the reads that fault pages in.
var sink int

var marker = [4]byte{'i', 'n', 'i', 't'}

// With fault-around switched off, touching one byte in every 64 KiB of a
// cached file's mapping maps one page each, not 16 (the kernel's default
// fault-around of 64 KiB maps the whole neighbourhood).
func TestNoFaultAroundMapsOnlyTheTouchedPages(t *testing.T) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe) // in the page cache from here on
	if err != nil {
		t.Fatal(err)
	}
	size := len(b) &^ (1<<16 - 1)
	if size < 1<<20 {
		t.Fatalf("%s is %d bytes, want at least 1 MiB", exe, len(b))
	}
	touch := func(t *testing.T, faultAround bool) int {
		f, err := os.Open(exe)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		m, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_PRIVATE)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Munmap(m)
		if !faultAround {
			start := uintptr(unsafe.Pointer(&m[0]))
			if err := noFaultAround([]Range{{start, start + uintptr(size)}}); err != nil {
				t.Skipf("this kernel does not let fault-around be switched off: %v", err)
			}
		}
		before := rssFileKiB(t)
		for i := 0; i < size; i += 1 << 16 {
			sink += int(m[i])
		}
		return rssFileKiB(t) - before
	}
	pages := size >> 16
	on := touch(t, true)
	off := touch(t, false)
	t.Logf("%d pages touched: RssFile +%d KiB with fault-around, +%d KiB without", pages, on, off)
	if on < pages*4*4 {
		t.Errorf("with fault-around RssFile grew by %d KiB, want at least %d (16 pages a fault on a cached file)", on, pages*4*4)
	}
	if off > pages*4*2 {
		t.Errorf("without fault-around RssFile grew by %d KiB, want at most %d (one page a fault)", off, pages*4*2)
	}
}
