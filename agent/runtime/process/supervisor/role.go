package supervisor

import (
	"fmt"
	"os"
)

// RoleEnv tells a re-executed copy of the binary which helper it is.
const RoleEnv = "KITE_PROCESS_RUNTIME_ROLE"

const (
	// RoleSupervisor waits for one container, writes its log and its
	// exit record, and outlives the agent (superviseMain).
	RoleSupervisor = "supervisor"
	// roleInit joins the container's cgroups, binds its mounts and execs
	// its command (initMain); only a supervisor starts it.
	roleInit = "init"
)

// SelfExe is the running binary. The kernel keeps it valid even if the
// file on disk is replaced by an upgrade, so helpers always match the
// agent that started them.
const SelfExe = "/proc/self/exe"

// init runs the helper role of a copy of the binary that the process
// runtime re-executed with RoleEnv set, and exits; in any other process
// it does nothing.
//
// It is an init function rather than a call from main because of what
// runs before main: every package initialiser of the binary, some 500 of
// them in kite (the API types' schemes, protobuf registries, CEL), about
// 25 ms of CPU and 5 MB of heap, paid again by every container start and
// kept for every container's life. Go initialises packages in import-path
// order as far as their imports allow, and this package imports only the
// standard library, so its init runs after some thirty packages, before
// k8s.io, etcd and the rest; the role exits from here and they never run.
// deps_test.go keeps the package on the standard library.
func init() {
	role := os.Getenv(RoleEnv)
	if role == "" {
		return
	}
	os.Exit(runRole(role, os.Args))
}

func runRole(role string, args []string) int {
	if len(args) < 2 {
		fmt.Fprintf(os.Stderr, "kite %s: no container directory given\n", role)
		return 2
	}
	switch role {
	case RoleSupervisor:
		return superviseMain(args[1])
	case roleInit:
		return initMain(args[1])
	default:
		fmt.Fprintf(os.Stderr, "kite: unknown %s=%q\n", RoleEnv, role)
		return 2
	}
}
