package supervisor

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestCgroupKillSignalsOnlyProcessesStillListed: a PID read from
// cgroup.procs whose member has exited may name an unrelated process by the
// time it is signalled (PID reuse). Kill by listing signals a PID only
// while a listing taken after it pinned the process still shows it, so a
// stale listing never kills a stranger, and a member listed throughout is
// killed. The listings are given (a real cgroup's cannot be made stale on
// demand); the processes are real.
func TestCgroupKillSignalsOnlyProcessesStillListed(t *testing.T) {
	for _, tc := range []struct {
		name string
		// stale: the process is listed only by the first read, as a
		// member that exited and whose PID was reused.
		stale      bool
		wantKilled bool
	}{
		{name: "a stale PID, now a stranger's, is spared", stale: true, wantKilled: false},
		{name: "a member listed throughout is killed", stale: false, wantKilled: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("sleep", "600")
			if err := cmd.Start(); err != nil {
				t.Skipf("needs sleep: %v", err)
			}
			pid := cmd.Process.Pid
			var waitErr error
			waited := make(chan struct{})
			go func() { waitErr = cmd.Wait(); close(waited) }()
			t.Cleanup(func() {
				cmd.Process.Kill()
				<-waited
			})
			reads := 0
			procs := func() []int {
				reads++
				if tc.stale && reads > 1 {
					return nil
				}
				select {
				case <-waited:
					return nil // killed and reaped: no longer a member
				default:
				}
				return []int{pid}
			}
			killListed(procs, time.Second)
			var killed bool
			select {
			case <-waited:
				ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
				killed = waitErr != nil && ws.Signaled() && ws.Signal() == syscall.SIGKILL
			case <-time.After(200 * time.Millisecond):
			}
			if killed != tc.wantKilled {
				t.Errorf("killed = %v, want %v", killed, tc.wantKilled)
			}
		})
	}
}
