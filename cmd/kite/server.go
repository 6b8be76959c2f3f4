package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	storageetcd "github.com/kite-project/kite/storage/etcd"
	"github.com/kite-project/kite/storage/etcd/backend"
)

// serverOptions are what kite server runs with.
type serverOptions struct {
	etcd backend.Options
	// compactionInterval is kube-apiserver's --etcd-compaction-interval:
	// 0 turns compaction off.
	compactionInterval time.Duration
}

func newServerCommand() *cobra.Command {
	var flags etcdFlags
	var compaction time.Duration
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the control plane: etcd (embedded unless --etcd-servers) and, as they land, the API server and agent",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			etcd, err := flags.options(cmd.Flags())
			if err != nil {
				return err
			}
			return runServer(cmd.Context(), cmd.OutOrStdout(), serverOptions{etcd: etcd, compactionInterval: compaction})
		},
	}
	flags.add(cmd.Flags())
	cmd.Flags().DurationVar(&compaction, "etcd-compaction-interval", storageetcd.DefaultCompactionInterval, "interval of compaction requests to etcd; 0 turns compaction off")
	return cmd
}

// runServer runs until ctx ends or etcd fails. It prints where etcd is and
// then "kite: ready" on out.
func runServer(ctx context.Context, out io.Writer, opts serverOptions) error {
	b, err := backend.Open(ctx, opts.etcd)
	if err != nil {
		if ctx.Err() != nil {
			return nil // a signal during the start asked us to stop
		}
		return err
	}
	defer b.Close()
	printBackend(out, b, opts.etcd)

	interval := opts.compactionInterval
	if interval <= 0 {
		interval = -1 // the compactor's "never compact, only observe"
	}
	compactor := storageetcd.NewCompactor(storageetcd.CompactorOptions{Client: b.Client(), Interval: interval})
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { compactor.Run(runCtx) })
	defer wg.Wait()
	defer cancel()

	// The API server (kite.Start) starts here, on b.Client() and the
	// compactor, once it exists; "ready" then means it serves.

	fmt.Fprintln(out, "kite: ready")
	return wait(ctx, out, b)
}

// wait blocks until ctx ends (a clean shutdown) or etcd fails.
func wait(ctx context.Context, out io.Writer, b *backend.Backend) error {
	select {
	case <-ctx.Done():
		fmt.Fprintln(out, "kite: shutting down")
		return nil
	case err := <-b.Err():
		return err
	}
}

func printBackend(out io.Writer, b *backend.Backend, opts backend.Options) {
	urls := strings.Join(b.Endpoints(), ",")
	if !b.Embedded() {
		fmt.Fprintf(out, "kite: using external etcd at %s\n", urls)
		return
	}
	dir, err := filepath.Abs(opts.Embedded.DataDir)
	if err != nil {
		dir = opts.Embedded.DataDir
	}
	fmt.Fprintf(out, "kite: embedded etcd listening on %s, data dir %s\n", urls, dir)
}
