package supervisor

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// ProcIdentity names one process for its whole life: a PID alone is not
// enough, because the kernel reuses PIDs, so every record of a process
// also keeps its start time (/proc/<pid>/stat field 22, clock ticks since
// boot), which a reused PID does not share.
type ProcIdentity struct {
	PID       int    `json:"pid"`
	StartTime uint64 `json:"startTime"`
}

// ProcStat reads the start time and the state letter of pid from
// /proc/<pid>/stat. A process that does not exist is an error wrapping
// os.ErrNotExist.
func ProcStat(pid int) (startTime uint64, state byte, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	// The command name (field 2) is in parentheses and may itself hold
	// spaces and parentheses: the fields after it start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat: no command field", pid)
	}
	fields := bytes.Fields(b[i+2:])
	// fields[0] is field 3 (state), so field 22 is fields[19].
	if len(fields) < 20 {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(fields)+2)
	}
	startTime, err = strconv.ParseUint(string(fields[19]), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat start time: %w", pid, err)
	}
	return startTime, fields[0][0], nil
}

// Identify returns the identity of the running process pid.
func Identify(pid int) (ProcIdentity, error) {
	st, _, err := ProcStat(pid)
	if err != nil {
		return ProcIdentity{}, err
	}
	return ProcIdentity{PID: pid, StartTime: st}, nil
}

// alive reports whether the process p recorded is still the one running
// under its PID: it exists, has not exited (a zombie has), and started at
// the recorded time.
func (p ProcIdentity) Alive() bool {
	if p.PID <= 0 {
		return false
	}
	st, state, err := ProcStat(p.PID)
	return err == nil && st == p.StartTime && state != 'Z' && state != 'X'
}

// GroupExists reports whether any process is left in the process group
// pgid. The group's leader is the container's first process (it ran
// setsid), and Linux does not hand out a PID while a process group of that
// number has members, so signalling -pgid cannot reach a stranger while
// this reports true.
func GroupExists(pgid int) bool {
	if pgid <= 0 {
		return false
	}
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// SignalGroup sends sig to the process group led by p, if p is still the
// process recorded. It opens a pidfd first and checks the start time
// after: a pidfd cannot come to name another process, so the check and
// the signal (pidfd_send_signal with PIDFD_SIGNAL_PROCESS_GROUP, Linux
// 6.9) have no gap in which the PID could be reused. Older kernels get
// kill(-pgid) right after the check. It reports whether p was ours.
func SignalGroup(p ProcIdentity, sig syscall.Signal) bool {
	const pidfdSignalProcessGroup = 1 << 2
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(p.PID), 0, 0)
	if errno == syscall.ENOSYS {
		// No pidfds (Linux < 5.3): check, then signal.
		return p.Alive() && syscall.Kill(-p.PID, sig) == nil
	}
	if errno != 0 {
		return false // ESRCH: gone
	}
	defer syscall.Close(int(fd))
	if !p.Alive() {
		return false
	}
	_, _, errno = syscall.Syscall6(sysPidfdSendSignal, fd, uintptr(sig), 0, pidfdSignalProcessGroup, 0, 0)
	if errno == syscall.EINVAL {
		return syscall.Kill(-p.PID, sig) == nil
	}
	return errno == 0
}
