// Package e2e runs the kite binary as a user would: built once by TestMain,
// started as a process, spoken to over its real ports, stopped by signals.
//
// Fixtures for every test in this package are in kite_test.go: StartKite
// runs the binary and waits for it to say it is ready, RunKite runs it to
// completion. Tests of the API server go in files named api_*_test.go.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// kiteBinary is the path of the kite binary that TestMain built.
var kiteBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kite-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: temp dir:", err)
		os.Exit(1)
	}
	kiteBinary = filepath.Join(dir, "kite")
	build := exec.Command("go", "build", "-o", kiteBinary, "github.com/kite-project/kite/cmd/kite")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: build kite:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(dir) }))
}
