package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kite-project/kite/storage/etcd/backend"
)

func newEtcdCommand() *cobra.Command {
	var flags embeddedFlags
	cmd := &cobra.Command{
		Use:   "etcd",
		Short: "Run only the embedded etcd, with its data under --data-dir",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runEtcd(cmd.Context(), cmd.OutOrStdout(), backend.Options{Embedded: flags.options()})
		},
	}
	flags.add(cmd.Flags())
	return cmd
}

// runEtcd runs the embedded etcd until ctx ends or etcd fails.
func runEtcd(ctx context.Context, out io.Writer, opts backend.Options) error {
	b, err := backend.Open(ctx, opts)
	if err != nil {
		if ctx.Err() != nil {
			return nil // a signal during the start asked us to stop
		}
		return err
	}
	defer b.Close()
	printBackend(out, b, opts)
	fmt.Fprintln(out, "kite: ready")
	return wait(ctx, out, b)
}
