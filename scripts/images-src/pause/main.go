// Command pause is the sandbox's first process, as upstream's pause
// (build/pause/linux/pause.c): it sleeps until SIGINT or SIGTERM, then
// exits 0, and reaps whatever is reparented to it. It is a module of its
// own so that scripts/images can build it statically without the
// project's dependencies.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if os.Getpid() != 1 {
		os.Stderr.WriteString("Warning: pause should be the first process\n")
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s == syscall.SIGCHLD {
			for {
				var ws syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
			continue
		}
		os.Stderr.WriteString("Shutting down, got signal: " + s.String() + "\n")
		os.Exit(0)
	}
}
