package process

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

// TestMain: the test binary serves as the runtime's supervisor and
// container init through package supervisor's init (Main is a no-op), and
// as a short-lived agent for TestAgentProcessRestart. It checks for
// leaked goroutines and removes the tests' parent cgroups afterwards.
func TestMain(m *testing.M) {
	Main()
	if root := os.Getenv(testAgentEnv); root != "" {
		os.Exit(testAgentMain(root))
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	if mounts, err := cgroupMounts(); err == nil {
		for _, root := range mounts {
			syscall.Rmdir(filepath.Join(root, testCgroupName)) // empty once every test has cleaned up
		}
	}
	os.Exit(code)
}
