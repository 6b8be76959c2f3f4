// Package supervisor is the part of the process runtime that runs in the
// re-executed copies of the binary rather than in the agent: a container's
// supervisor (conmon's part: it starts the command, writes its CRI log,
// serves attach sessions, waits for it and records how it ended) and the
// container's init (cgroups, mounts and user before the command's exec).
// It also holds what the agent and the supervisors share: the records in
// a container's directory, the attach protocol, process identities and
// cgroup paths.
//
// It imports only the standard library, so that a supervisor starts
// without the rest of the binary's initialisers (see init in role.go).
// The agent's side is package process; docs/runtime.md describes both.
package supervisor
