package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kite-project/kite/controllers"
	"github.com/kite-project/kite/controllers/nodeipam"
	"github.com/kite-project/kite/controllers/nodelifecycle"
	"github.com/kite-project/kite/controllers/podgc"
)

// controllerFlags choose and tune the control loops, named as
// kube-controller-manager's flags.
type controllerFlags struct {
	names            []string
	nodeMonitorGrace time.Duration
	terminatedPodGC  int
	nodeIPAM         nodeIPAMFlags
}

func (f *controllerFlags) add(fs *pflag.FlagSet) {
	fs.StringSliceVar(&f.names, "controllers", controllers.All(), "control loops to run beside the API server; none with --controllers=\"\"")
	fs.DurationVar(&f.nodeMonitorGrace, "node-monitor-grace-period", nodelifecycle.DefaultGracePeriod, "how long a node may go without renewing its Lease or posting status before it is marked Unknown and tainted unreachable")
	f.nodeIPAM.add(fs)
	fs.IntVar(&f.terminatedPodGC, "terminated-pod-gc-threshold", podgc.DefaultTerminatedThreshold, "number of terminated pods kept before the pod garbage collector deletes the oldest; 0 or less keeps them all")
}

// options checks the names and returns what controllers.Options and
// kite.Options take.
func (f *controllerFlags) options() (names []string, grace time.Duration, gcThreshold int, err error) {
	names = []string{}
	for _, n := range f.names {
		if n == "" {
			continue
		}
		if !slices.Contains(controllers.All(), n) {
			return nil, 0, 0, fmt.Errorf("--controllers: unknown controller %q (known: %s)", n, strings.Join(controllers.All(), ", "))
		}
		names = append(names, n)
	}
	gcThreshold = f.terminatedPodGC
	if gcThreshold <= 0 {
		gcThreshold = -1 // kube-controller-manager: 0 or less turns it off
	}
	return names, f.nodeMonitorGrace, gcThreshold, nil
}

func newControllersCommand() *cobra.Command {
	var flags controllerFlags
	var kubeconfig string
	var signing signingFlags
	var useSACredentials bool
	var qps float32
	var burst int
	cmd := &cobra.Command{
		Use:   "controllers",
		Short: "Run the control loops alone, against the API server --kubeconfig names",
		Long: `Run Kite's controllers (the scheduler, node lifecycle, taint eviction, pod GC,
namespace, serviceaccount and root CA publisher controllers, or those
--controllers names) as
clients of the API server that --kubeconfig names: the job of
kube-controller-manager and kube-scheduler. kite server and kite apiserver
run them in-process already.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if kubeconfig == "" {
				return fmt.Errorf("--kubeconfig is required")
			}
			names, grace, gc, err := flags.options()
			if err != nil {
				return err
			}
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
			}
			cfg.QPS, cfg.Burst = qps, burst
			names, clusterCIDRs, err := flags.nodeIPAM.options(names)
			if err != nil {
				return err
			}
			m, err := controllers.New(controllers.Options{Config: cfg, Names: names, NodeMonitorGracePeriod: grace, TerminatedPodGCThreshold: gc,
				NodeIPAM:               nodeipam.Options{ClusterCIDRs: clusterCIDRs, NodeCIDRMaskSize: flags.nodeIPAM.maskSize},
				ClusterSigningCertFile: signing.certFile, ClusterSigningKeyFile: signing.keyFile, ClusterSigningDuration: signing.duration,
				UseServiceAccountCredentials: useSACredentials})
			if err != nil {
				return err
			}
			return runControllers(cmd.Context(), &syncWriter{w: cmd.OutOrStdout()}, m, cfg.Host)
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the API server to work against")
	cmd.Flags().BoolVar(&useSACredentials, "use-service-account-credentials", false, "run each controller as its own ServiceAccount in kube-system (kube-controller-manager's flag); --kubeconfig's user lists and watches and asks for their tokens")
	// kube-controller-manager's defaults: client-go's own (5 QPS, burst
	// 10) made a 100-replica ReplicaSet take 21 s.
	cmd.Flags().Float32Var(&qps, "kube-api-qps", 20, "QPS of the controllers' requests to the API server (kube-controller-manager's flag)")
	cmd.Flags().IntVar(&burst, "kube-api-burst", 30, "burst of the controllers' requests to the API server (kube-controller-manager's flag)")
	signing.add(cmd.Flags())
	flags.add(cmd.Flags())
	return cmd
}

func runControllers(ctx context.Context, out io.Writer, m *controllers.Manager, host string) error {
	fmt.Fprintf(out, "kite: controllers %s against %s\n", strings.Join(m.Names(), ", "), host)
	m.Run(ctx)
	return nil
}
