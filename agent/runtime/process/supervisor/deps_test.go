package supervisor

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsOnlyTheStandardLibrary: a supervisor skips the binary's
// other package initialisers only as long as this package, and all it
// imports, are initialised before them, which Go guarantees only for
// imports of the standard library (see init in role.go). Needs the go
// command.
func TestImportsOnlyTheStandardLibrary(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command to list the package's dependencies")
	}
	out, err := exec.Command(goCmd, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	const self = "github.com/kite-project/kite/agent/runtime/process/supervisor"
	for _, p := range strings.Fields(string(out)) {
		if p != self {
			t.Errorf("imports %s, which is not in the standard library", p)
		}
	}
}
