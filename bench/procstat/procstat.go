// Package procstat reads what the side-by-side benchmarks report of a
// process and the machine from /proc: CPU time, resident memory and the
// load average.
package procstat

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Load is /proc/loadavg's 1, 5 and 15 minute figures, or "?".
func Load() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// statFields are the fields of /proc/<pid>/stat after the command, which
// may hold spaces: f[0] is field 3 (state), f[1] field 4 (ppid), and so
// on. At least n of them, or an error saying what was read.
func statFields(pid, n int, what string) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, fmt.Errorf("%s of %d: %w", what, pid, err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < n {
		return nil, fmt.Errorf("%s of %d: short stat %q", what, pid, s)
	}
	return f, nil
}

// Parent is the process's parent PID (/proc/<pid>/stat field 4).
func Parent(pid int) (int, error) {
	f, err := statFields(pid, 2, "parent")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(f[1])
}

// CPUSeconds is the process's user+system time from /proc/<pid>/stat
// (fields 14 and 15, in clock ticks of 1/100 s on Linux).
func CPUSeconds(pid int) (float64, error) {
	f, err := statFields(pid, 13, "cpu")
	if err != nil {
		return 0, err
	}
	u, err1 := strconv.ParseFloat(f[11], 64)
	sy, err2 := strconv.ParseFloat(f[12], 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("cpu of %d: %w", pid, err)
	}
	return (u + sy) / 100, nil
}

// MinorFaults is the process's minor page faults so far (/proc/<pid>/stat
// field 10, minflt): faults served without I/O, e.g. a page of the
// executable mapped again from the page cache.
func MinorFaults(pid int) (float64, error) {
	f, err := statFields(pid, 8, "minor faults")
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseFloat(f[7], 64)
	if err != nil {
		return 0, fmt.Errorf("minor faults of %d: %w", pid, err)
	}
	return n, nil
}

// Memory is VmRSS, RssAnon and RssFile of /proc/<pid>/status in KiB.
func Memory(pid int) (map[string]float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, fmt.Errorf("memory of %d: %w", pid, err)
	}
	mem := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && (k == "VmRSS" || k == "RssAnon" || k == "RssFile") {
			mem[k], _ = strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		}
	}
	return mem, nil
}
