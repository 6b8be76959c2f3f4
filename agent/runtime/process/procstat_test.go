package process

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kite-project/kite/agent/runtime/process/supervisor"
)

// TestSignalGroup: the whole group of the recorded process is signalled;
// a record with another start time signals nothing.
func TestSignalGroup(t *testing.T) {
	tests := []struct {
		name       string
		startDelta uint64
		wantSent   bool
	}{
		{"recorded process", 0, true},
		{"same PID, other start time", 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command("sh", "-c", "sleep 100 & echo $!; wait")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }()
			buf := make([]byte, 32)
			n, _ := out.Read(buf)
			child, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
			if err != nil {
				t.Fatalf("child pid %q: %v", buf[:n], err)
			}
			p, err := supervisor.Identify(cmd.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			p.StartTime += tt.startDelta
			if sent := supervisor.SignalGroup(p, syscall.SIGKILL); sent != tt.wantSent {
				t.Fatalf("supervisor.SignalGroup = %v, want %v", sent, tt.wantSent)
			}
			time.Sleep(100 * time.Millisecond)
			if alive := processAlive(child); alive == tt.wantSent {
				t.Errorf("group member alive=%v after supervisor.SignalGroup sent=%v", alive, tt.wantSent)
			}
		})
	}
}
