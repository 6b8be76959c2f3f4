package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/connrotation"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/agent"
	"github.com/kite-project/kite/agent/bootstrap"
	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/agent/options"
	storageetcd "github.com/kite-project/kite/storage/etcd"
	"github.com/kite-project/kite/storage/etcd/backend"
	"github.com/kite-project/kite/storage/etcd/embedded"
)

// serverOptions are what kite server and kite apiserver run with.
type serverOptions struct {
	etcd backend.Options
	// compactionInterval is kube-apiserver's --etcd-compaction-interval:
	// 0 turns compaction off.
	compactionInterval time.Duration
	// api configures the API server; Backend and Compactor are filled in
	// by runServer with the etcd it opened.
	api kite.Options
	// agent, when set, runs the node agent for this host against the
	// in-process API (its RESTConfig is filled in by runServer).
	agent *agent.Options
	// log receives the agent's log lines.
	log logr.Logger
}

func newServerCommand() *cobra.Command {
	var flags controlPlaneFlags
	var verbosity int
	agent := options.New()
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the control plane and the node agent for this host: etcd (embedded unless --etcd-servers), the API server, the agent",
		Long: `Run etcd (embedded unless --etcd-servers), the Kubernetes API server over it
(as kite apiserver), and the node agent for this host (as kite agent) on the
in-process API. The agent registers its Node and reads static pods from
--pod-manifest-path and --manifest-url, and runs its pods as host processes,
or from images through containerd with --container-runtime=containerd
(state under --root-dir, default --data-dir/agent).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := flags.options(cmd.Flags())
			if err != nil {
				return err
			}
			out := &syncWriter{w: cmd.OutOrStdout()}
			if !cmd.Flags().Changed("root-dir") {
				agent.RootDir = filepath.Join(opts.api.DataDir, "agent")
			}
			agentOpts, err := completeAgent(cmd.Flags(), out, agent)
			if err != nil {
				return err
			}
			if err := flags.api.clusterDNS.apply(&opts.api, agentOpts.ClusterDomain); err != nil {
				return err
			}
			if agentOpts.ClusterDNS, err = agentClusterDNS(agentOpts.ClusterDNS, opts.api); err != nil {
				return err
			}
			opts.agent, opts.log = &agentOpts, newLogger(out, verbosity)
			return runServer(cmd.Context(), out, opts)
		},
	}
	flags.add(cmd.Flags())
	addVerbosityFlag(cmd.Flags(), &verbosity)
	// The agent's flags but --kubeconfig: this agent uses the API next to it.
	agentFlags := pflag.NewFlagSet("agent", pflag.ContinueOnError)
	agent.AddFlags(agentFlags)
	agentFlags.VisitAll(func(f *pflag.Flag) {
		if f.Name != "kubeconfig" {
			cmd.Flags().AddFlag(f)
		}
	})
	return cmd
}

// runServer runs etcd, the compactor, the API server and, if configured,
// the agent, until ctx ends or etcd or the API server fails. It prints
// where etcd and the API are, then "kite: ready" on out.
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
	// The compactor stops after the API server, which reads from it.
	defer wg.Wait()
	defer cancel()

	apiOpts := opts.api
	apiOpts.Backend, apiOpts.Compactor = b, compactor
	srv, err := kite.Start(ctx, apiOpts)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("API server: %w", err)
	}
	defer srv.Close()
	printAPI(out, srv)
	if addr := srv.ClusterDNSAddr(); addr != "" {
		fmt.Fprintf(out, "kite: cluster DNS on %s (udp, tcp)\n", addr)
	} else if err := srv.ClusterDNSErr(); err != nil {
		fmt.Fprintf(out, "kite: running without cluster DNS: %v\n", err)
	}

	if opts.agent != nil {
		agentOpts := *opts.agent
		// The agent is its node, as a kubelet after its TLS bootstrap:
		// the Node authorizer and NodeRestriction judge it, never the
		// admin's rights.
		if agentOpts.RESTConfig, err = agentConfig(ctx, srv, agentOpts.NodeName); err != nil {
			return err
		}
		// The agent's connections are closed when it stops: the API
		// server's graceful shutdown would otherwise wait for them to go
		// idle (about a second).
		conns := connrotation.NewDialer((&net.Dialer{}).DialContext)
		agentOpts.RESTConfig.Dial = conns.DialContext
		// The agent beside the API serves with a certificate of the
		// cluster's CA.
		// Its InternalIP is named, the agent's default when not given,
		// as the API server verifies the certificate for that address.
		if agentOpts.Node.NodeIP == nil {
			agentOpts.Node.NodeIP = agentOpts.Node.Host.InternalIP()
		}
		hosts := []string{"127.0.0.1", "localhost", agentOpts.NodeName, agentOpts.Node.NodeIP.String()}
		cert, err := srv.AgentCertificate(agentOpts.NodeName, hosts...)
		if err != nil {
			return err
		}
		agentOpts.ServerCertificate = &cert
		defer conns.CloseAll()
		a, stop, err := startAgent(runCtx, out, opts.log, agentOpts)
		if err != nil {
			return err
		}
		// Runs before srv.Close: the agent's watch ends with the agent,
		// not with a refused connection.
		defer stop()
		// Ready once the agent has read its pods from the API, so that its
		// connection is up: a stop right after the start then does not cut
		// a TLS handshake short (the API server logs those on stderr).
		waitSeen(ctx, a, kubetypes.APISource, agentSeenTimeout)
	}
	fmt.Fprintln(out, "kite: ready")
	select {
	case <-ctx.Done():
		fmt.Fprintln(out, "kite: shutting down")
		return nil
	case err := <-b.Err():
		return err
	case err := <-srv.Err():
		return err
	}
}

// agentSeenTimeout bounds how long the start waits for the agent's first
// read of the in-process API; it takes milliseconds.
const agentSeenTimeout = 10 * time.Second

// waitSeen returns once a has heard from source, ctx ends or timeout passes.
func waitSeen(ctx context.Context, a *agent.Agent, source string, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for !a.Seen(source) {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
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
	// A client in another process (kite apiserver over kite etcd) needs
	// the files of etcd's client certificate: say where they are.
	f := embedded.ClientTLSFiles(dir)
	fmt.Fprintf(out, "kite: embedded etcd listening on %s, data dir %s, clients: --etcd-cafile %s --etcd-certfile %s --etcd-keyfile %s\n",
		urls, dir, f.CAFile, f.CertFile, f.KeyFile)
}

// syncWriter serialises writes to out: the agent's log lines come from its
// goroutines while the command prints its own.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// agentConfig is the identity of kite server's agent: system:node:<name>
// in system:nodes, with the binding that lets nodes run the service
// proxy.
func agentConfig(ctx context.Context, srv *kite.Server, nodeName string) (*rest.Config, error) {
	admin, err := kubernetes.NewForConfig(srv.RESTConfig())
	if err != nil {
		return nil, err
	}
	if err := bootstrap.EnsureNodeProxier(ctx, admin); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	cfg, err := srv.NodeConfig(nodeName)
	if err != nil {
		return nil, fmt.Errorf("agent: identity of node %s: %w", nodeName, err)
	}
	return cfg, nil
}
