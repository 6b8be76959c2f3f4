package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// The process runtime's state lives in files under Options.RootDir, so that a
// restarted agent, and the supervisors that outlive it, agree on it:
//
//	<root>/sandboxes/<id>/sandbox.json   sandboxRecord (agent)
//	<root>/containers/<id>/container.json containerRecord (agent, at create)
//	<root>/containers/<id>/spec.json     ContainerSpec (agent, at create; read by supervisor and init)
//	<root>/containers/<id>/started.json  StartedRecord (supervisor, once the command runs)
//	<root>/containers/<id>/exit.json     ExitRecord (supervisor, once it is gone)
//	<root>/containers/<id>/supervisor.log the supervisor's own stderr
//	<root>/containers/<id>/supervisor.lock flock(2)ed by the supervisor while it lives
//	<root>/containers/<id>/attach.sock   the supervisor's attach sessions (stdin or tty only)
//
// Every file is written whole, by rename, so a reader sees either nothing
// or all of it.
//
// The names, the JSON of each record and the attach protocol are the
// interface between the agent and the supervisors it left running: a
// newer agent adopts an older agent's supervisors through them, so a
// change must keep what is written today readable.
const (
	SpecFile       = "spec.json"
	StartedFile    = "started.json"
	ExitFile       = "exit.json"
	LogFile        = "supervisor.log"
	supervisorLock = "supervisor.lock"
	recordFileMode = 0o600
)

// ContainerSpec is what CreateContainer decided and what the supervisor
// and the container's init carry out.
type ContainerSpec struct {
	ID          string      `json:"id"`
	Args        []string    `json:"args"` // command + args
	Env         []string    `json:"env"`
	WorkingDir  string      `json:"workingDir,omitempty"`
	LogPath     string      `json:"logPath"` // absolute
	LogMaxSize  int64       `json:"logMaxSize,omitempty"`
	LogMaxFiles int         `json:"logMaxFiles,omitempty"`
	Cgroup      CgroupPaths `json:"cgroup"`
	Mounts      []Mount     `json:"mounts,omitempty"`
	User        *User       `json:"user,omitempty"`
	OOMScoreAdj *int64      `json:"oomScoreAdj,omitempty"` // the kubelet's per-QoS value
	// Stdin keeps the container's standard input open for attach (a
	// pipe, or the terminal with TTY); StdinOnce ends it with the first
	// attach session's; TTY runs the container on a terminal.
	Stdin     bool `json:"stdin,omitempty"`
	StdinOnce bool `json:"stdinOnce,omitempty"`
	TTY       bool `json:"tty,omitempty"`
}

// Mount is a bind mount of a pod's volume in the container's mount
// namespace.
type Mount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// StartedRecord is written by the supervisor once the command runs.
type StartedRecord struct {
	Process    ProcIdentity `json:"process"`    // the container's first process, leader of its process group
	Supervisor ProcIdentity `json:"supervisor"` // the supervisor that waits for it
	StartedAt  int64        `json:"startedAt"`  // Unix nanoseconds
	BootID     string       `json:"bootID"`     // the host's boot: PIDs and start times hold within one
}

// ExitRecord is written by the supervisor when the container has ended,
// or by the runtime when it finds that the container's processes and its
// supervisor vanished without one (then Reason is "Unknown").
type ExitRecord struct {
	ExitCode   int32  `json:"exitCode"`
	FinishedAt int64  `json:"finishedAt"` // Unix nanoseconds
	Reason     string `json:"reason"`     // Completed, Error, OOMKilled, StartError, Unknown
	Message    string `json:"message,omitempty"`
}

// WriteRecord writes v as JSON to dir/name through a temporary file and a
// rename, so that no reader sees half a record.
func WriteRecord(dir, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	tmp, err := os.CreateTemp(dir, "."+name+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", joinPath(dir, name), err)
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), recordFileMode)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), joinPath(dir, name))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", joinPath(dir, name), err)
	}
	return nil
}

// ReadRecord reads dir/name into v; a missing file is an error wrapping
// os.ErrNotExist.
func ReadRecord(dir, name string, v any) error {
	b, err := os.ReadFile(joinPath(dir, name))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode %s: %w", joinPath(dir, name), err)
	}
	return nil
}

func RecordExists(dir, name string) bool {
	_, err := os.Stat(joinPath(dir, name))
	return err == nil
}

// ReadBootID returns the kernel's ID of this boot.
func ReadBootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("read boot id: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// Supervised reports whether a supervisor runs for the container in dir:
// one holds its lock for its whole life. A start under way in a supervisor
// that an agent before a restart started has no record yet but holds it.
func Supervised(dir string) bool {
	f, err := os.Open(joinPath(dir, supervisorLock))
	if err != nil {
		return false // none ever ran
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}
