package process

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain lets the test binary serve as the runtime's supervisor and
// container init (Main returns at once in the test process itself), and
// as a short-lived agent for TestAgentProcessRestart.
func TestMain(m *testing.M) {
	Main()
	if root := os.Getenv(testAgentEnv); root != "" {
		os.Exit(testAgentMain(root))
	}
	goleak.VerifyTestMain(m)
}
