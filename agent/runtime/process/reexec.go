package process

// Imported for its init, deliberately: in a copy of the binary
// re-executed with KITE_PROCESS_RUNTIME_ROLE set, that init runs the
// helper role (see supervisor's role.go) and calls os.Exit, before the
// initialisers of the binary's other packages; without the variable it
// does nothing. This process-global effect is deliberate and must stay:
// every binary linking the runtime needs it.
import _ "github.com/kite-project/kite/agent/runtime/process/supervisor"

// Main is kept for the binaries and tests that call it first thing in
// main (cmd/kite, TestMain of tests that start containers). It does
// nothing: a copy of the binary re-executed as a container's supervisor
// or init runs its role, and exits, from package supervisor's init,
// before main and before most package initialisers. A binary gets that by
// linking this package.
func Main() {}
