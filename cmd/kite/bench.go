package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kite-project/kite/workload"
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
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			rules.ExplicitPath = f.kubeconfig
			cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
			if err != nil {
				return fmt.Errorf("kubeconfig: %w", err)
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
