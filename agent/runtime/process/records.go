package process

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The runtime's state lives in files under Options.RootDir, so that a
// restarted agent, and the supervisors that outlive it, agree on it:
//
//	<root>/sandboxes/<id>/sandbox.json   sandboxRecord (agent)
//	<root>/containers/<id>/container.json containerRecord (agent, at create)
//	<root>/containers/<id>/spec.json     containerSpec (agent, at create; read by supervisor and init)
//	<root>/containers/<id>/started.json  startedRecord (supervisor, once the command runs)
//	<root>/containers/<id>/exit.json     exitRecord (supervisor, once it is gone)
//	<root>/containers/<id>/supervisor.log the supervisor's own stderr
//	<root>/containers/<id>/supervisor.lock flock(2)ed by the supervisor while it lives
//	<root>/containers/<id>/attach.sock   the supervisor's attach sessions (stdin or tty only)
//
// Every file is written whole, by rename, so a reader sees either nothing
// or all of it.
const (
	sandboxFile    = "sandbox.json"
	containerFile  = "container.json"
	specFile       = "spec.json"
	startedFile    = "started.json"
	exitFile       = "exit.json"
	supervisorLog  = "supervisor.log"
	supervisorLock = "supervisor.lock"
	sandboxesDir   = "sandboxes"
	containersDir  = "containers"
	removingPrefix = ".removing-" // a directory being removed; New finishes the job
	recordFileMode = 0o600
)

// containerSpec is what CreateContainer decided and what the supervisor
// and the container's init carry out.
type containerSpec struct {
	ID          string      `json:"id"`
	Args        []string    `json:"args"` // command + args
	Env         []string    `json:"env"`
	WorkingDir  string      `json:"workingDir,omitempty"`
	LogPath     string      `json:"logPath"` // absolute
	LogMaxSize  int64       `json:"logMaxSize,omitempty"`
	LogMaxFiles int         `json:"logMaxFiles,omitempty"`
	Cgroup      cgroupPaths `json:"cgroup"`
	Mounts      []mountSpec `json:"mounts,omitempty"`
	User        *userSpec   `json:"user,omitempty"`
	OOMScoreAdj *int64      `json:"oomScoreAdj,omitempty"` // the kubelet's per-QoS value
	// Stdin keeps the container's standard input open for attach (a
	// pipe, or the terminal with TTY); StdinOnce ends it with the first
	// attach session's; TTY runs the container on a terminal.
	Stdin     bool `json:"stdin,omitempty"`
	StdinOnce bool `json:"stdinOnce,omitempty"`
	TTY       bool `json:"tty,omitempty"`
}

type mountSpec struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// containerRecord is what the runtime must know again about a container
// after a restart; Config holds the CRI ContainerConfig as protobuf.
type containerRecord struct {
	ID        string `json:"id"`
	SandboxID string `json:"sandboxID"`
	CreatedAt int64  `json:"createdAt"` // Unix nanoseconds
	Config    []byte `json:"config"`
}

// startedRecord is written by the supervisor once the command runs.
type startedRecord struct {
	Process    procIdentity `json:"process"`    // the container's first process, leader of its process group
	Supervisor procIdentity `json:"supervisor"` // the supervisor that waits for it
	StartedAt  int64        `json:"startedAt"`  // Unix nanoseconds
	BootID     string       `json:"bootID"`     // the host's boot: PIDs and start times hold within one
}

// exitRecord is written by the supervisor when the container has ended,
// or by the runtime when it finds that the container's processes and its
// supervisor vanished without one (then Reason is "Unknown").
type exitRecord struct {
	ExitCode   int32  `json:"exitCode"`
	FinishedAt int64  `json:"finishedAt"` // Unix nanoseconds
	Reason     string `json:"reason"`     // Completed, Error, OOMKilled, StartError, Unknown
	Message    string `json:"message,omitempty"`
}

type sandboxRecord struct {
	ID        string      `json:"id"`
	CreatedAt int64       `json:"createdAt"`
	Config    []byte      `json:"config"`
	Cgroup    cgroupPaths `json:"cgroup"`
	Stopped   bool        `json:"stopped,omitempty"`
	BootID    string      `json:"bootID"` // a sandbox does not survive a reboot (its cgroup does not)
}

// writeRecord writes v as JSON to dir/name through a temporary file and a
// rename, so that no reader sees half a record.
func writeRecord(dir, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	tmp, err := os.CreateTemp(dir, "."+name+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(dir, name), err)
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
		err = os.Rename(tmp.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", filepath.Join(dir, name), err)
	}
	return nil
}

// readRecord reads dir/name into v; a missing file is an error wrapping
// os.ErrNotExist.
func readRecord(dir, name string, v any) error {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode %s: %w", filepath.Join(dir, name), err)
	}
	return nil
}

func recordExists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

// readBootID returns the kernel's ID of this boot.
func readBootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("read boot id: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
