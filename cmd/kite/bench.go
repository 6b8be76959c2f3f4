package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kite-project/kite/workload"
	"github.com/kite-project/kite/workload/chaos"
)

// benchFlags are the flags of kite bench.
type benchFlags struct {
	kubeconfig  string
	contentType string
	output      string
	decode      string
	opts        workload.Options
}

func newBenchCommand() *cobra.Command {
	var f benchFlags
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run the standard workloads (create, list, paginate, watch fan-out, informer sync) against any API server and print what they measured",
		Long: `Run the standard workloads against the API server of a kubeconfig, in a
namespace of its own that is deleted afterwards: create --pods pods over
--nodes node names from --writers clients; list them all from cache (RV=0)
and consistently (RV=""); list by spec.nodeName; paginate with limit 500;
update --updates pods while --watchers watches (all namespaces, then one
node each) check that they see every update exactly once; sync a client-go
informer; and read the server's memory from /metrics before and after the
creates. The client runs on the same machine as the server when the
server is local: compare figures of the same machine only. So that the
client's own work does not swamp the server's, lists and watchers read
the response bodies and watch frames and decode only what the checks need
(--decode raw); --decode client-go decodes every pod in full, as
client-go's typed clients do. The informer sync is client-go's either way.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			contentType, err := mediaType(f.contentType)
			if err != nil {
				return err
			}
			if f.output != "table" && f.output != "json" {
				return fmt.Errorf("--output must be table or json, not %q", f.output)
			}
			decode := workload.Decode(f.decode)
			if !decode.Valid() {
				return fmt.Errorf("--decode must be %s or %s, not %q", workload.RawDecode, workload.ClientGoDecode, f.decode)
			}
			cfg, err := benchConfig(f.kubeconfig)
			if err != nil {
				return err
			}
			cfg.ContentType = contentType
			opts := f.opts
			opts.Decode = decode
			opts.Log = cmd.ErrOrStderr()
			report, err := workload.Run(cmd.Context(), cfg, opts)
			if err != nil {
				return err
			}
			if f.output == "json" {
				return workload.WriteJSON(cmd.OutOrStdout(), report)
			}
			return workload.WriteTable(cmd.OutOrStdout(), report)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the API server to measure (default $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&f.contentType, "content-type", "json", "wire format of requests and responses: json or protobuf")
	fs.StringVarP(&f.output, "output", "o", "table", "table or json")
	fs.StringVar(&f.opts.Namespace, "namespace", "", "namespace to create, use and delete (default a generated kite-bench-xxxxx); it must not exist")
	fs.IntVar(&f.opts.Pods, "pods", 10000, "pods to create")
	fs.IntVar(&f.opts.Nodes, "nodes", 100, "node names to spread the pods over (no Node objects are created)")
	fs.IntVar(&f.opts.Writers, "writers", 16, "concurrent clients that create and update")
	fs.IntVar(&f.opts.Watchers, "watchers", 500, "watches of each fan-out")
	fs.IntVar(&f.opts.Updates, "updates", 500, "pod updates of each fan-out")
	fs.IntVar(&f.opts.Repeats, "repeats", 5, "runs of each list and informer sync")
	fs.StringVar(&f.decode, "decode", string(workload.RawDecode), "how lists and fan-out watchers read responses: raw (decode only what the checks need: item names, continue token; event type, namespace, resourceVersion, sent annotation; so the figures measure the server) or client-go (its typed client, every pod decoded in full)")
	fs.DurationVar(&f.opts.DeliveryTimeout, "delivery-timeout", workload.DefaultDeliveryTimeout, "how long watchers wait for their events after the last update; what has not arrived by then is lost")
	cmd.AddCommand(newBenchNodeCommand(), newBenchChaosCommand(), newBenchClusterCommand(), newBenchCRDCommand())
	return cmd
}

// benchConfig loads the kubeconfig at path, or client-go's default one.
func benchConfig(path string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, nil
}

func newBenchNodeCommand() *cobra.Command {
	var kubeconfig, output string
	var opts workload.NodeOptions
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Measure a node agent: pods bound to --node until Running, one at a time and all at once, static pods, agent memory",
		Long: `Run the node workloads against the agent of --node through the API server of
a kubeconfig, in a namespace of its own that is deleted afterwards: create
--pods pods bound to the node one after another, each until a watch sees it
Running (p50/p99 of create to Running); create --burst pods at once until all
are Running, and read the agent's memory then (--agent-pid, on the agent's
host); delete them until all are gone; with --manifest-dir (the agent's
--pod-manifest-path, on its host), write --static-pods manifests until their
mirror pods are Running. Each pod runs 'sleep 3600'.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("--output must be table or json, not %q", output)
			}
			cfg, err := benchConfig(kubeconfig)
			if err != nil {
				return err
			}
			opts.Log = cmd.ErrOrStderr()
			report, err := workload.RunNode(cmd.Context(), cfg, opts)
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
	fs.StringVar(&opts.Node, "node", "", "the node whose agent runs the pods (required)")
	fs.StringVar(&opts.Namespace, "namespace", "", "namespace to create, use and delete (default a generated kite-bench-node-xxxxx)")
	fs.IntVar(&opts.Pods, "pods", 100, "pods created one at a time (negative: none)")
	fs.IntVar(&opts.Burst, "burst", 110, "pods created at once (negative: none)")
	fs.IntVar(&opts.StaticPods, "static-pods", 100, "static pod manifests written into --manifest-dir (negative: none)")
	fs.StringVar(&opts.ManifestDir, "manifest-dir", "", "the agent's --pod-manifest-path; empty skips the static pods")
	fs.IntVar(&opts.AgentPID, "agent-pid", 0, "the agent's process ID, to read its memory from /proc")
	fs.DurationVar(&opts.Timeout, "timeout", 2*time.Minute, "bound of each wait for pods to run or go")
	return cmd
}

// mediaType turns --content-type into the media type client-go sends.
func mediaType(s string) (string, error) {
	switch s {
	case "json", "application/json":
		return "application/json", nil
	case "protobuf", "application/vnd.kubernetes.protobuf":
		return "application/vnd.kubernetes.protobuf", nil
	}
	return "", fmt.Errorf("--content-type must be json or protobuf, not %q", s)
}

func newBenchChaosCommand() *cobra.Command {
	var opts chaos.Options
	var keep bool
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Run writers and watchers against kite etcd, kite apiserver and kite agent processes while they are killed, cut and compacted, and check nothing was lost",
		Long: `Start kite etcd, kite apiserver --etcd-servers and kite agent as processes of
--kite-binary (default this binary) under a directory of their own, and a TCP
proxy on 127.0.0.1 in front of the API server. Through the proxy, --writers
clients create, update and delete configmaps (each write carries a sequence
number) and --watchers watches with label selectors (one of --groups) follow
them, half the clients speaking JSON and half protobuf, while every
--fault-interval a fault fires in turn: every proxied connection cut; the API
server killed with SIGKILL and restarted; etcd killed and restarted; the
agent killed and restarted; watches opened that are never read; etcd and the
API server killed together and restarted. etcd is compacted every 10 s. Pods
bound to the agent's node must keep their one process throughout. At the end
every acknowledged write must be in a fresh list and in etcd, and every
watcher's stream exactly-once and in order, or re-listed after a 410 into the
same state. Exits non-zero when anything was lost, duplicated or reordered.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for name, v := range map[string]int{"writers": opts.Writers, "watchers": opts.Watchers, "groups": opts.Groups, "pods": opts.Pods} {
				if v <= 0 {
					return fmt.Errorf("--%s must be positive, not %d", name, v)
				}
			}
			if opts.Duration <= 0 || opts.FaultInterval <= 0 || opts.WritePause < 0 {
				return fmt.Errorf("--duration and --fault-interval must be positive and --write-pause not negative, not %s, %s, %s", opts.Duration, opts.FaultInterval, opts.WritePause)
			}
			if opts.Binary != "" {
				if st, err := os.Stat(opts.Binary); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
					return fmt.Errorf("--kite-binary %s is not an executable file (%v)", opts.Binary, err)
				}
			} else {
				exe, err := os.Executable()
				if err != nil {
					return fmt.Errorf("--kite-binary: %w", err)
				}
				opts.Binary = exe
			}
			dir, err := os.MkdirTemp("", "kite-chaos-")
			if err != nil {
				return err
			}
			if !keep {
				defer os.RemoveAll(dir)
			}
			opts.Dir = dir
			opts.Log = cmd.ErrOrStderr()
			report, err := chaos.Run(cmd.Context(), opts)
			if report != nil {
				report.Print(cmd.OutOrStdout())
			}
			if err != nil {
				return fmt.Errorf("%w (logs in %s)", err, dir)
			}
			if !report.OK() {
				return fmt.Errorf("the fault test found losses, duplicates, reorders or pod restarts")
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.Binary, "kite-binary", "", "kite binary that runs etcd, the API server and the agent (default this binary)")
	fs.DurationVar(&opts.Duration, "duration", 3*time.Minute, "how long the load runs under faults")
	fs.DurationVar(&opts.FaultInterval, "fault-interval", 10*time.Second, "time between two faults")
	fs.IntVar(&opts.Writers, "writers", 16, "concurrent writers")
	fs.IntVar(&opts.Watchers, "watchers", 1000, "watchers")
	fs.IntVar(&opts.Groups, "groups", 8, "label selector groups the objects and watchers split over")
	fs.IntVar(&opts.Pods, "pods", 3, "pods run by the agent through the faults")
	fs.DurationVar(&opts.WritePause, "write-pause", 20*time.Millisecond, "each writer's pause between writes")
	fs.BoolVar(&keep, "keep", false, "keep the processes' data and logs")
	return cmd
}

func newBenchCRDCommand() *cobra.Command {
	var kubeconfig, output string
	var crsFirst bool
	var opts workload.Options
	cmd := &cobra.Command{
		Use:   "crd",
		Short: "Compare custom resources with built-in pods of the same size: create rate, list from cache, watch fan-out, memory per object",
		Long: `Install the CRD benchpods.bench.kite.io (a structural schema of the bench
pod's fields) on the API server of a kubeconfig and, in a namespace of its
own, create --pods pods and as many BenchPods that carry the same fields (a
pod's spec with its defaults written out, and its status), from --writers
clients, reading the server's memory around each batch (after a garbage
collection through /debug/pprof/heap?gc=1); list each from cache (RV=0)
--repeats times, alternating; update --updates of each while --watchers
watches of all namespaces check that every update arrives exactly once; and
print each figure of the custom resources against the pods' (ratio = custom
resources / pods). All requests are JSON, as custom resources have no
protobuf, and responses are read raw for both kinds. The CRD, the objects and
the namespace are deleted afterwards; the CRD must not exist beforehand.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("--output must be table or json, not %q", output)
			}
			cfg, err := benchConfig(kubeconfig)
			if err != nil {
				return err
			}
			opts.Log = cmd.ErrOrStderr()
			report, err := workload.RunCustomResources(cmd.Context(), cfg, opts, crsFirst)
			if report != nil && (err == nil || len(report.Results) > 0) {
				// What was measured before a failure (in the cleanup,
				// say) is printed too.
				write := workload.WriteTable
				if output == "json" {
					write = workload.WriteJSON
				}
				err = errors.Join(err, write(cmd.OutOrStdout(), report))
			}
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the API server to measure (default $KUBECONFIG or ~/.kube/config)")
	fs.StringVarP(&output, "output", "o", "table", "table or json")
	fs.StringVar(&opts.Namespace, "namespace", "", "namespace to create, use and delete (default a generated kite-bench-crd-xxxxx); it must not exist")
	fs.IntVar(&opts.Pods, "pods", 10000, "pods to create, and as many custom resources")
	fs.IntVar(&opts.Nodes, "nodes", 100, "node names to spread the objects over (spec.nodeName)")
	fs.IntVar(&opts.Writers, "writers", 16, "concurrent clients that create and update")
	fs.IntVar(&opts.Watchers, "watchers", 500, "watches of each fan-out")
	fs.IntVar(&opts.Updates, "updates", 500, "updates of each fan-out")
	fs.IntVar(&opts.Repeats, "repeats", 10, "lists of each kind")
	fs.BoolVar(&crsFirst, "crs-first", false, "create, list and watch the custom resources before the pods (the second batch may reuse memory the first freed)")
	fs.DurationVar(&opts.DeliveryTimeout, "delivery-timeout", workload.DefaultDeliveryTimeout, "how long watchers wait for their events after the last update; what has not arrived by then is lost")
	return cmd
}
