package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/kite-project/kite/workload"
)

func newBenchClusterCommand() *cobra.Command {
	var kubeconfig, output string
	var opts workload.ClusterOptions
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Measure what a kubectl user waits for: kubectl run until Ready (scheduling included), kubectl exec -- true, kubectl logs of a large log",
		Long: `Run the cluster workloads through the API server of a kubeconfig whose cluster
has at least one node with an agent, in a namespace of its own that is
deleted afterwards: create --pods pods without a node, as kubectl run makes
them, one after another, each until a watch sees it Ready (p50/p99 of create
to Ready, the scheduler's placement and the agent's start included); run
'true' --execs times in the first of them through pods/exec, as kubectl exec
does (WebSocket, SPDY as the fallback; p50/p99 of the round trip); run a pod
that writes --log-bytes to stdout in lines of 100 bytes and exits, and read
its whole log through pods/log --log-reads times (MB/s). The agent keeps
what its --container-log-max-size and --container-log-max-files allow: the
note says how much of the log each read returned.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("--output must be table or json, not %q", output)
			}
			for name, v := range map[string]int{"pods": opts.Pods, "execs": opts.Execs, "log-reads": opts.LogReads} {
				if v < 0 {
					return fmt.Errorf("--%s must not be negative, not %d", name, v)
				}
			}
			if opts.LogBytes < 100 || opts.Timeout < 0 {
				return fmt.Errorf("--log-bytes must be at least one 100-byte line and --timeout not negative, not %d and %s", opts.LogBytes, opts.Timeout)
			}
			cfg, err := benchConfig(kubeconfig)
			if err != nil {
				return err
			}
			opts.Log = cmd.ErrOrStderr()
			report, err := workload.RunCluster(cmd.Context(), cfg, opts)
			if err != nil {
				return err
			}
			if output == "json" {
				return workload.WriteJSON(cmd.OutOrStdout(), report)
			}
			return workload.WriteTable(cmd.OutOrStdout(), report)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the API server (default $KUBECONFIG or ~/.kube/config)")
	fs.StringVarP(&output, "output", "o", "table", "table or json")
	fs.StringVar(&opts.Namespace, "namespace", "", "namespace to create, use and delete (default a generated kite-bench-cluster-xxxxx)")
	fs.IntVar(&opts.Pods, "pods", 50, "pods run one at a time until Ready")
	fs.IntVar(&opts.Execs, "execs", 20, "execs of true, one at a time")
	fs.Int64Var(&opts.LogBytes, "log-bytes", 100_000_000, "size of the log to read")
	fs.IntVar(&opts.LogReads, "log-reads", 3, "reads of the whole log, one at a time")
	fs.DurationVar(&opts.Timeout, "timeout", 2*time.Minute, "bound of each wait for a pod")
	return cmd
}
