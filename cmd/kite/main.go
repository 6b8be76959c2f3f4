// Command kite is the Kite control plane in one binary.
//
// Each subcommand turns its flags into the Options of the package that does
// the work and runs it until SIGINT or SIGTERM. Errors are printed as one
// line on stderr and exit with code 1.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	// Deliberate, and process-global on purpose: a copy of this binary
	// re-executed as a container's supervisor or init runs that role and
	// calls os.Exit from this package's init (only when
	// KITE_PROCESS_RUNTIME_ROLE is set; otherwise it does nothing), before the
	// initialisers of the rest of the binary and before main. Keep this
	// import: without it the process runtime's containers cannot start.
	_ "github.com/kite-project/kite/agent/runtime/process/supervisor"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCommand().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "kite: %v\n", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "kite",
		Short: "Kite: a small Kubernetes-compatible control plane in one binary",
		// Errors are printed once, by main, as one line; a usage dump
		// after a runtime error hides the error.
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.AddCommand(newServerCommand(), newAPIServerCommand(), newAgentCommand(), newControllersCommand(), newEtcdCommand(), newBenchCommand(), newImagesCommand(), newKubeconfigCommand(), newTokenCommand())
	return root
}
