package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/agent/options"
	"github.com/kite-project/kite/apiserver"
	"github.com/kite-project/kite/apiserver/authz"
	"github.com/kite-project/kite/apiserver/metricsapi"
	"github.com/kite-project/kite/pki"
	storageetcd "github.com/kite-project/kite/storage/etcd"
	"github.com/kite-project/kite/storage/watchcache"
)

// apiFlags are the API server's flags, named as kube-apiserver's.
type apiFlags struct {
	bindAddress           string
	tlsSANs               []string
	securePort            int
	watchCacheSizes       []string
	defaultWatchCacheSize int
	profiling             bool
	http2MaxStreams       int
	maxInflight           int
	maxMutatingInflight   int
	enableAPF             bool
	minRequestTimeout     int // seconds
	metricResolution      time.Duration
	authorizationModes    []string
	controllers           controllerFlags
	serviceNet            serviceNetFlags
	admission             admissionFlags
	authn                 authnFlags
	clusterDNS            clusterDNSFlags
}

func (f *apiFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.bindAddress, "bind-address", "127.0.0.1", "address the API server listens on for HTTPS")
	fs.StringSliceVar(&f.tlsSANs, "tls-san", nil, "more host names or IP addresses for the API server's serving certificate, besides 127.0.0.1, ::1, localhost and --bind-address (repeat the flag or separate with ','): the names agents and clients on other hosts reach it by; a change reissues the certificate from the same CA")
	fs.IntVar(&f.securePort, "secure-port", kite.DefaultSecurePort, "port the API server serves HTTPS on; 0 picks a free port (the kubeconfig names it)")
	fs.StringSliceVar(&f.watchCacheSizes, "watch-cache-sizes", nil, "watch cache size per resource, resource[.group]#size: 0 serves the resource from etcd alone, a positive size bounds its event window (which keeps at least 75 s of history when the bound allows)")
	fs.IntVar(&f.defaultWatchCacheSize, "default-watch-cache-size", -1, "watch cache size of resources not in --watch-cache-sizes: 0 disables their caches, negative is Kite's default window")
	fs.IntVar(&f.http2MaxStreams, "http2-max-streams-per-connection", 0, "limit of concurrent HTTP/2 streams the server gives each client connection; 0 means kube-apiserver's default, 100")
	fs.BoolVar(&f.profiling, "profiling", true, "serve Go's profiles at /debug/pprof/ to authenticated clients, as kube-apiserver does")
	fs.IntVar(&f.maxInflight, "max-requests-inflight", apiserver.DefaultMaxRequestsInFlight, "limit of non-mutating requests in flight (watches and system:masters excepted); past it a request gets 429; 0 disables the limit")
	fs.IntVar(&f.maxMutatingInflight, "max-mutating-requests-inflight", apiserver.DefaultMaxMutatingRequestsInFlight, "limit of mutating requests in flight (system:masters excepted); past it a request gets 429; 0 disables the limit")
	fs.BoolVar(&f.enableAPF, "enable-priority-and-fairness", true, "API priority and fairness (docs/flowcontrol.md): requests classified by FlowSchemas into priority levels sharing --max-requests-inflight + --max-mutating-requests-inflight seats, queued fairly, 429 past their queues; false applies the two limits as they are")
	f.serviceNet.add(fs)
	fs.IntVar(&f.minRequestTimeout, "min-request-timeout", int(apiserver.DefaultMinRequestTimeout/time.Second), "seconds a watch without timeoutSeconds lasts at least (it lasts up to twice as long)")
	fs.DurationVar(&f.metricResolution, "metric-resolution", metricsapi.DefaultResolution, "how often the metrics API (metrics.k8s.io, kubectl top) reads every agent's summary, as metrics-server's flag")
	fs.StringSliceVar(&f.authorizationModes, "authorization-mode", []string{authz.ModeNode, authz.ModeRBAC}, "ordered list of authorizers of requests: AlwaysAllow, AlwaysDeny, Node, RBAC (system:masters is always allowed)")
	f.controllers.add(fs)
	f.admission.add(fs)
	f.authn.add(fs)
	f.clusterDNS.add(fs)
}

// controlPlaneFlags are the flags kite server and kite apiserver share:
// which etcd, its compaction, and the API server.
type controlPlaneFlags struct {
	etcd       etcdFlags
	api        apiFlags
	compaction time.Duration
}

func (f *controlPlaneFlags) add(fs *pflag.FlagSet) {
	f.etcd.add(fs)
	f.api.add(fs)
	addCompactionFlag(fs, &f.compaction)
}

// options turns the flags into the control plane's part of serverOptions.
func (f *controlPlaneFlags) options(fs *pflag.FlagSet) (serverOptions, error) {
	etcdOpts, err := f.etcd.options(fs)
	if err != nil {
		return serverOptions{}, err
	}
	apiOpts, err := f.api.options(f.etcd.embedded.dataDir)
	if err != nil {
		return serverOptions{}, err
	}
	return serverOptions{etcd: etcdOpts, compactionInterval: f.compaction, api: apiOpts}, nil
}

func newAPIServerCommand() *cobra.Command {
	var flags controlPlaneFlags
	var clusterDomain string
	cmd := &cobra.Command{
		Use:   "apiserver",
		Short: "Run etcd (embedded unless --etcd-servers) and the API server, without the node agent",
		Long: `Run etcd (embedded unless --etcd-servers) and the Kubernetes API server over
it, on --bind-address:--secure-port (HTTPS). The CA, serving certificate and
admin token are generated under --data-dir/pki and reused on restart; the
admin kubeconfig is written to --data-dir/kubeconfig.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := flags.options(cmd.Flags())
			if err != nil {
				return err
			}
			if err := flags.api.clusterDNS.apply(&opts.api, clusterDomain); err != nil {
				return err
			}
			return runServer(cmd.Context(), &syncWriter{w: cmd.OutOrStdout()}, opts)
		},
	}
	flags.add(cmd.Flags())
	cmd.Flags().StringVar(&clusterDomain, "cluster-domain", options.DefaultClusterDomain, "the cluster's domain, which the cluster DNS answers")
	return cmd
}

func (f *apiFlags) options(dataDir string) (kite.Options, error) {
	names, grace, gc, err := f.controllers.options()
	if err != nil {
		return kite.Options{}, err
	}
	if err := pki.CheckHosts(f.tlsSANs); err != nil {
		return kite.Options{}, fmt.Errorf("--tls-san: %w", err)
	}
	opts := kite.Options{DataDir: dataDir, BindAddress: f.bindAddress, ExtraSANs: f.tlsSANs, SecurePort: f.securePort, Profiling: f.profiling, HTTP2MaxStreamsPerConnection: f.http2MaxStreams,
		Controllers: names, NodeMonitorGracePeriod: grace, TerminatedPodGCThreshold: gc, Authentication: f.authn.options()}
	if _, err := authz.ParseModes(strings.Join(f.authorizationModes, ",")); err != nil {
		return kite.Options{}, fmt.Errorf("--authorization-mode: %w", err)
	}
	opts.AuthorizationMode = strings.Join(f.authorizationModes, ",")
	for name, v := range map[string]int{"max-requests-inflight": f.maxInflight, "max-mutating-requests-inflight": f.maxMutatingInflight} {
		if v < 0 {
			return kite.Options{}, fmt.Errorf("--%s can not be negative value", name)
		}
	}
	if err := f.serviceNet.apply(&opts); err != nil {
		return kite.Options{}, err
	}
	if opts.Controllers, opts.ClusterCIDRs, err = f.controllers.nodeIPAM.options(opts.Controllers); err != nil {
		return kite.Options{}, err
	}
	opts.NodeCIDRMaskSize = f.controllers.nodeIPAM.maskSize
	if f.minRequestTimeout <= 0 {
		return kite.Options{}, fmt.Errorf("--min-request-timeout must be positive, got %d", f.minRequestTimeout)
	}
	// The flags' 0 is upstream's "no limit", the options' negative.
	opts.MaxRequestsInFlight, opts.MaxMutatingRequestsInFlight = noLimitIfZero(f.maxInflight), noLimitIfZero(f.maxMutatingInflight)
	opts.DisablePriorityAndFairness = !f.enableAPF
	opts.MinRequestTimeout = time.Duration(f.minRequestTimeout) * time.Second
	if f.metricResolution <= 0 {
		return kite.Options{}, fmt.Errorf("--metric-resolution must be positive, got %s", f.metricResolution)
	}
	opts.MetricResolution = f.metricResolution
	if err := f.admission.apply(&opts); err != nil {
		return kite.Options{}, err
	}
	if len(f.watchCacheSizes) > 0 || f.defaultWatchCacheSize >= 0 {
		per, err := watchcache.ParseSizes(f.watchCacheSizes)
		if err != nil {
			return kite.Options{}, fmt.Errorf("--watch-cache-sizes: %w", err)
		}
		opts.WatchCacheSizes = &watchcache.Sizes{Default: f.defaultWatchCacheSize, PerResource: per}
	}
	return opts, nil
}

func noLimitIfZero(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

func addCompactionFlag(fs *pflag.FlagSet, interval *time.Duration) {
	fs.DurationVar(interval, "etcd-compaction-interval", storageetcd.DefaultCompactionInterval, "interval of compaction requests to etcd; 0 turns compaction off")
}

// printAPI says where the API is and how to reach it with kubectl: the
// kubeconfig path is absolute so the line can be pasted anywhere.
func printAPI(out io.Writer, srv *kite.Server) {
	path, err := filepath.Abs(srv.KubeconfigPath())
	if err != nil {
		path = srv.KubeconfigPath()
	}
	fmt.Fprintf(out, "kite: API server listening on %s; kubectl --kubeconfig %s get pods\n", srv.URL(), path)
}
