// Package exepages releases the pages of the running executable that the
// agent's process mapped while Go ran the binary's package initialisers.
//
// Kite is one binary: `kite agent` links the API server, etcd, CEL and the
// controllers too, and Go runs the init function of every linked package
// (about 590) before main, whatever the subcommand. Each initialiser touches
// its package's code and read-only data, and the kernel maps each such page
// fault's 64 KiB neighbourhood from the page cache ("fault-around"), so a
// `kite agent` starts with ~60 MiB of the binary resident, most of which the
// agent never touches again. Once main runs, Release first switches the
// kernel's fault-around off for the executable's read-only mappings where
// the kernel allows it (fault_linux.go: MADV_RANDOM does not do it; an
// asynchronous write-protect userfaultfd registration does), then drops
// this process's page table entries for them (MADV_DONTNEED). What the agent
// then uses faults back in from the page cache, one page per minor fault,
// with no I/O (the pages stay cached, clean copies of the file); what only
// the initialisers, or only the neighbours of used code, held stays out of
// the agent's resident set for good. Figures: docs/agent.md "Memory".
//
// Only mappings of the executable that are neither writable nor shared are
// released: a private writable mapping (.data) may hold the process's own
// modified pages, which MADV_DONTNEED would replace with the file's original
// contents.
package exepages

import (
	"fmt"
	"strconv"
	"strings"
)

// Range is one mapping of the executable, [Start, End).
type Range struct{ Start, End uintptr }

// ReadOnlyMappings returns the mappings in maps (the text of
// /proc/self/smaps, or of /proc/self/maps) of the file exe that are private
// and not writable: the executable's code and read-only data, which
// MADV_DONTNEED can drop without changing what the process reads there.
//
// With smaps' per-mapping fields, a mapping that holds anonymous pages is
// left out too: a read-only mapping of the file can still hold the
// process's own copies of pages written before it was made read-only (a
// position-independent build's relocated .data.rel.ro), and dropping those
// would bring back the file's unrelocated contents.
func ReadOnlyMappings(maps, exe string) ([]Range, error) {
	var out []Range
	// last is the index in out of the mapping whose smaps fields follow,
	// or -1 when they belong to a mapping not taken.
	last := -1
	for _, line := range strings.Split(maps, "\n") {
		if line == "" {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.ContainsAny(k, " -") {
			// A field of the mapping above (smaps): "Anonymous:   8 kB".
			if k == "Anonymous" && last >= 0 {
				kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				if err != nil {
					return nil, fmt.Errorf("smaps field %q: %w", line, err)
				}
				if kb > 0 {
					out = out[:last]
				}
				last = -1
			}
			continue
		}
		last = -1
		// address perms offset dev inode [path]; the path is everything
		// after the fifth field and may contain spaces.
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		path := strings.Join(f[5:], " ")
		if path != exe {
			continue
		}
		perms := f[1]
		if len(perms) != 4 {
			return nil, fmt.Errorf("mapping %q: permissions %q", line, perms)
		}
		if perms[0] != 'r' || perms[1] != '-' || perms[3] != 'p' {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			return nil, fmt.Errorf("mapping %q: address %q", line, f[0])
		}
		s, err1 := strconv.ParseUint(lo, 16, 64)
		e, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || e <= s {
			return nil, fmt.Errorf("mapping %q: address %q", line, f[0])
		}
		last = len(out)
		out = append(out, Range{Start: uintptr(s), End: uintptr(e)})
	}
	return out, nil
}
