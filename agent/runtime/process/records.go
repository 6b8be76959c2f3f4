package process

import "github.com/kite-project/kite/agent/runtime/process/supervisor"

// The runtime's state lives in files under Options.RootDir; the layout,
// and the records that the supervisors read and write, are described in
// package supervisor (records.go). These are the agent's own.
const (
	sandboxFile    = "sandbox.json"
	containerFile  = "container.json"
	sandboxesDir   = "sandboxes"
	containersDir  = "containers"
	removingPrefix = ".removing-" // a directory being removed; New finishes the job
)

// containerRecord is what the runtime must know again about a container
// after a restart; Config holds the CRI ContainerConfig as protobuf.
type containerRecord struct {
	ID        string `json:"id"`
	SandboxID string `json:"sandboxID"`
	CreatedAt int64  `json:"createdAt"` // Unix nanoseconds
	Config    []byte `json:"config"`
}

type sandboxRecord struct {
	ID        string                 `json:"id"`
	CreatedAt int64                  `json:"createdAt"`
	Config    []byte                 `json:"config"`
	Cgroup    supervisor.CgroupPaths `json:"cgroup"`
	Stopped   bool                   `json:"stopped,omitempty"`
	BootID    string                 `json:"bootID"` // a sandbox does not survive a reboot (its cgroup does not)
}
