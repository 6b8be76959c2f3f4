package process

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestExecEndsWithItsContainer: without a cgroup an exec session or an
// exec probe runs in a process group of its own, which nothing else
// reaches: it must end when its container is stopped, or when the
// container exits by itself, and not outlive its pod.
func TestExecEndsWithItsContainer(t *testing.T) {
	for _, tc := range []struct {
		name string
		// probe: through ExecSync, as the prober and hooks call it.
		probe bool
		// exits: the container ends by itself instead of being stopped.
		exits bool
	}{
		{name: "exec session, container stopped"},
		{name: "exec probe, container stopped", probe: true},
		{name: "exec session, container exited", exits: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{NoCgroups: true})
			script := "exec sleep 600"
			gate := filepath.Join(t.TempDir(), "gate")
			if tc.exits {
				script = "while [ ! -e " + gate + " ]; do sleep 0.05; done"
			}
			id := f.run(containerConfig("c", "sh", "-c", script))
			pidFile := filepath.Join(t.TempDir(), "pid")
			cmd := []string{"sh", "-c", "echo $$ > " + pidFile + "; exec sleep 600"}
			ended := make(chan error, 1)
			go func() {
				var err error
				if tc.probe {
					_, err = f.rt.ExecSync(context.Background(), id, cmd, time.Hour)
				} else {
					var out bytes.Buffer
					_, err = f.rt.Exec(context.Background(), id, cmd, nil, &out, &out)
				}
				ended <- err
			}()
			var pid int
			deadline := time.Now().Add(10 * time.Second)
			for pid == 0 {
				b, _ := os.ReadFile(pidFile)
				pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
				if pid == 0 && time.Now().After(deadline) {
					t.Fatal("the exec command never ran")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if tc.exits {
				if err := os.WriteFile(gate, nil, 0o644); err != nil {
					t.Fatal(err)
				}
				f.waitExited(id, 10*time.Second)
			} else if err := f.rt.StopContainer(context.Background(), id, 1); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-ended:
				if err == nil || !strings.Contains(err.Error(), "container stopped") {
					t.Errorf("exec ended with %v, want an error saying the container stopped", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the exec command still runs after its container ended")
			}
			if processAlive(pid) {
				t.Errorf("exec process %d outlived its container", pid)
			}
		})
	}
}
