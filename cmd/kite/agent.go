package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/kite-project/kite/agent"
	"github.com/kite-project/kite/agent/exepages"
	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/agent/options"
	"github.com/kite-project/kite/agent/proxy"
)

func newAgentCommand() *cobra.Command {
	o := options.New()
	var verbosity int
	var join joinFlags
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the node agent alone: static pods from files and URLs, and the pods bound to its node through --kubeconfig",
		Long: `Run the node agent for one node (--hostname-override, default the host name
lowercased). Its pods come from --pod-manifest-path (a directory or one file),
--manifest-url and, with --kubeconfig, the API server (pods whose
spec.nodeName is the node; the agent then registers its Node and keeps a
mirror pod for each static pod). Flags are the kubelet's; --config reads a
KubeletConfiguration file and flags given override it.

It runs each pod's containers as host processes (the built-in process
runtime), or from their images through containerd with
--container-runtime=containerd (or --container-runtime-endpoint), keeps
their logs, state and volumes under --root-dir, writes the
pods' status, and keeps the Node's status and Lease current. It logs each
operation (ADD, UPDATE, DELETE, REMOVE, RECONCILE) with the full names of its
pods, one line each. Stopping the agent leaves the pods running; the next
agent on the same --root-dir adopts them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := &syncWriter{w: cmd.OutOrStdout()}
			// The initialisers of the control plane's packages, linked into
			// this one binary, have faulted in tens of MiB of its code that
			// the agent never runs: drop those mappings, the agent faults
			// back what it uses (agent/exepages, docs/agent.md "Memory").
			// KITE_AGENT_EXE_PAGES=keep skips it and =fault-around keeps the
			// kernel's fault-around on, for measuring the difference.
			if mode := os.Getenv("KITE_AGENT_EXE_PAGES"); mode != "keep" {
				if _, err := exepages.Release(mode == "fault-around"); err != nil {
					fmt.Fprintf(out, "kite: agent: %v\n", err)
				}
			}
			if err := join.join(klog.NewContext(cmd.Context(), newLogger(out, verbosity)), out, o); err != nil {
				return err
			}
			opts, err := completeAgent(cmd.Flags(), out, o)
			if err != nil {
				return err
			}
			ctx, stop, err := join.rotate(klog.NewContext(cmd.Context(), newLogger(out, verbosity)), o, &opts)
			if err != nil {
				return err
			}
			defer stop()
			return runAgent(ctx, out, newLogger(out, verbosity), opts)
		},
	}
	o.AddFlags(cmd.Flags())
	join.add(cmd.Flags())
	addVerbosityFlag(cmd.Flags(), &verbosity)
	return cmd
}

// completeAgent loads --config under the flags, validates, and turns the
// result into the agent's Options (reading --kubeconfig if given).
func completeAgent(fs *pflag.FlagSet, out io.Writer, o *options.Options) (agent.Options, error) {
	warnings, err := o.Complete(fs)
	for _, w := range warnings {
		fmt.Fprintf(out, "kite: agent: %s\n", w)
	}
	if err != nil {
		return agent.Options{}, err
	}
	opts, err := agent.FromOptions(o)
	if err != nil {
		return agent.Options{}, err
	}
	// The start bound has no flag (the kubelet has none); the benchmarks
	// compare one binary with and without it through the environment.
	if v, err := strconv.Atoi(os.Getenv("KITE_CRI_MAX_PARALLEL_STARTS")); err == nil {
		opts.MaxParallelStarts = v
		if v <= 0 {
			opts.MaxParallelStarts = -1
		}
	}
	return opts, nil
}

// runAgent runs the agent alone until ctx ends. With an API server it
// registers the Node in the background, retrying, as the kubelet does: an
// API server that is not up yet does not stop the static pods.
func runAgent(ctx context.Context, out io.Writer, log logr.Logger, opts agent.Options) error {
	_, stop, err := startAgent(ctx, out, log, opts)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintln(out, "kite: ready")
	<-ctx.Done()
	fmt.Fprintln(out, "kite: shutting down")
	return nil
}

// startAgent starts the agent; stop ends it and waits.
func startAgent(ctx context.Context, out io.Writer, log logr.Logger, opts agent.Options) (_ *agent.Agent, stop func(), err error) {
	a, err := agent.New(opts)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(out, "kite: agent for node %s, pod sources: %s\n", opts.NodeName, strings.Join(sourceNames(opts), ", "))
	if opts.ProxyMode == agent.ProxyNFTables {
		fmt.Fprintf(out, "kite: service proxy: nftables, tables ip and ip6 %s\n", proxy.TableName)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(ctx, log))
	var wg sync.WaitGroup
	wg.Go(func() { a.Run(ctx) })
	return a, func() {
		cancel()
		wg.Wait()
	}, nil
}

func sourceNames(opts agent.Options) []string {
	var names []string
	if opts.StaticPodPath != "" {
		names = append(names, kubetypes.FileSource+" "+opts.StaticPodPath)
	}
	if opts.StaticPodURL != "" {
		names = append(names, kubetypes.HTTPSource+" "+opts.StaticPodURL)
	}
	if opts.RESTConfig != nil {
		names = append(names, kubetypes.APISource+" "+opts.RESTConfig.Host)
	}
	if len(names) == 0 {
		return []string{"none"}
	}
	return names
}

// newLogger writes klog-style text lines to out. It is handed to the
// agent through its context, not installed as klog's global logger.
func newLogger(out io.Writer, verbosity int) logr.Logger {
	return textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(out), textlogger.Verbosity(verbosity)))
}

func addVerbosityFlag(fs *pflag.FlagSet, v *int) {
	fs.IntVarP(v, "v", "v", 0, "log level of the agent (the kubelet's -v): 1 says what each source watches, 2 and more add detail")
}
