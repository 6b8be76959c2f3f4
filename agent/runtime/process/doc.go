// Package process is the node agent's built-in container runtime: it runs
// each container's command as host processes, implementing
// runtime.Service (a CRI-shaped RuntimeService) without images, a root
// filesystem or a network namespace. Pods use the host's network.
//
// Each container has a supervisor, a copy of this binary re-executed in
// the "supervisor" role (package supervisor, which runs it from its init
// before the binary's other initialisers), which plays conmon's part: it starts
// the command in a session of its own (and, with mounts, in a private
// mount namespace), writes its stdout and stderr to the CRI log, waits for
// it and records how it ended. The supervisors outlive the agent, and
// every fact about a container is a file under Options.RootDir, so a
// restarted agent finds its containers again, running or exited, and never
// takes a process under a reused PID for one of them: a process is
// identified by its PID and its start time. Cgroups (v2, or v1 memory, cpu
// and pids), where writable, give limits and OOMKilled.
//
// docs/runtime.md describes the design and its reasons.
package process
