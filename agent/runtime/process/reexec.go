package process

import (
	"fmt"
	"os"
	"runtime/debug"
)

// roleEnv tells a re-executed copy of the binary which helper it is.
const roleEnv = "KITE_PROCESS_RUNTIME_ROLE"

const (
	roleSupervisor = "supervisor"
	roleInit       = "init"
)

// selfExe is the running binary. The kernel keeps it valid even if the
// file on disk is replaced by an upgrade, so helpers always match the
// agent that started them.
const selfExe = "/proc/self/exe"

// Main runs the process runtime's helper roles in a copy of the binary
// that the runtime re-executed, and returns at once in any other process.
// Call it first thing in main() of every binary that creates a Runtime
// (cmd/kite, and TestMain of tests that start containers): the runtime
// starts /proc/self/exe with KITE_PROCESS_RUNTIME_ROLE set, as moby's
// reexec does, so the helpers need no separate binary.
//
// The roles, both documented in docs/runtime.md: "supervisor" waits for one
// container, writes its log and its exit record, and outlives the agent;
// "init" joins the container's cgroup, binds its mounts and execs its
// command.
func Main() {
	role := os.Getenv(roleEnv)
	if role == "" {
		return
	}
	// Started with GOGC=off, so that the package initialisers ran without
	// a collection; the role lives as long as its container.
	debug.SetGCPercent(100)
	if len(os.Args) < 2 {
		fmt.Fprintf(os.Stderr, "kite %s: no container directory given\n", role)
		os.Exit(2)
	}
	switch role {
	case roleSupervisor:
		os.Exit(superviseMain(os.Args[1]))
	case roleInit:
		os.Exit(initMain(os.Args[1]))
	default:
		fmt.Fprintf(os.Stderr, "kite: unknown %s=%q\n", roleEnv, role)
		os.Exit(2)
	}
}
