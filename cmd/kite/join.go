package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kite-project/kite/agent"
	"github.com/kite-project/kite/agent/bootstrap"
	"github.com/kite-project/kite/agent/options"
	"github.com/kite-project/kite/pki"
)

// signingFlags are kite controllers' flags for the CSR signer, named as
// kube-controller-manager's.
type signingFlags struct {
	certFile, keyFile string
	duration          time.Duration
}

func (f *signingFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.certFile, "cluster-signing-cert-file", "", "CA certificate (PEM) the CertificateSigningRequest signer signs with, e.g. <data-dir>/pki/ca.crt; without it requests are not signed")
	fs.StringVar(&f.keyFile, "cluster-signing-key-file", "", "the key of --cluster-signing-cert-file")
	fs.DurationVar(&f.duration, "cluster-signing-duration", 365*24*time.Hour, "the longest certificate the signer issues")
}

// joinFlags are kite agent's flags for joining with a bootstrap token
// (kubeadm join's, in one command with the agent).
type joinFlags struct {
	server, token, caCert string
	caCertHashes          []string
}

func (f *joinFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.server, "server", "", "URL of the API server to join with --token (TLS bootstrap); the agent then runs with its own kubeconfig, <root-dir>/kubeconfig")
	fs.StringVar(&f.token, "token", "", "bootstrap token (kite token create) to ask for the node's client certificate with; not needed again once <root-dir>/kubeconfig holds a good certificate")
	fs.StringArrayVar(&f.caCertHashes, "ca-cert-hash", nil, "sha256:<hex> pin of the cluster CA's public key (printed by kite token create --print-join-command); the CA is then read from the cluster-info ConfigMap and checked against it")
	fs.StringVar(&f.caCert, "ca-cert", "", "the cluster CA (PEM file), instead of or with --ca-cert-hash")
}

// join runs the TLS bootstrap when --server is given and points the
// agent's --kubeconfig at the node's own kubeconfig.
func (f *joinFlags) join(ctx context.Context, out io.Writer, o *options.Options) error {
	if f.server == "" {
		if f.token != "" || len(f.caCertHashes) > 0 || f.caCert != "" {
			return fmt.Errorf("--token, --ca-cert-hash and --ca-cert need --server")
		}
		return nil
	}
	if o.KubeConfig != "" {
		return fmt.Errorf("--server and --kubeconfig exclude each other: a joining agent writes its own kubeconfig")
	}
	name, err := o.NodeName()
	if err != nil {
		return err
	}
	path, err := bootstrap.Join(ctx, bootstrap.JoinOptions{
		Server: f.server, Token: f.token, CACertHashes: f.caCertHashes, CACertFile: f.caCert, NodeName: name, Dir: o.RootDir,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "kite: agent joined %s as system:node:%s (%s)\n", f.server, name, path)
	o.KubeConfig = path
	return nil
}

// rotate keeps a joined agent's certificates current (the kubelet's
// rotateCertificates and serverTLSBootstrap): the agent's client
// presents the client certificate current at each handshake, and its
// server the kubelet-serving certificate once one is issued (a
// self-signed one before). stop ends the rotations and waits.
func (f *joinFlags) rotate(ctx context.Context, o *options.Options, opts *agent.Options) (_ context.Context, stop func(), _ error) {
	if f.server == "" {
		return ctx, func() {}, nil
	}
	ip := opts.Node.NodeIP
	if ip == nil {
		ip = opts.Node.Host.InternalIP() // the agent's default, which its Node reports
	}
	node, err := bootstrap.NewNode(bootstrap.NodeOptions{Dir: o.RootDir, NodeName: opts.NodeName, ServingHosts: []string{ip.String(), opts.NodeName}})
	if err != nil {
		return nil, nil, err
	}
	opts.RESTConfig, opts.ServerClientCA = node.RESTConfig(), node.CAPEM()
	opts.GetServerCertificate = node.Serving.GetCertificate
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { node.Run(ctx) })
	return ctx, func() { cancel(); wg.Wait() }, nil
}

func newTokenCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Manage bootstrap tokens for joining nodes"}
	var (
		dataDir, server, description string
		ttl                          time.Duration
		printJoin                    bool
	)
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a bootstrap token a node joins with (kite agent --server --token)",
		Long: `Create a bootstrap token (a bootstrap.kubernetes.io/token Secret in kube-system,
in the group system:bootstrappers:kite:default-node-token) and print it, as
kubeadm token create does. It also makes sure of what joining needs, as
kubeadm init makes it: the group bound to system:node-bootstrapper and to
the automatic approval of node client certificates, system:nodes to the
approval of their renewal, and the cluster-info ConfigMap in kube-public
(the server URL and CA). It talks to the server with the admin kubeconfig
of --data-dir.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			admin := filepath.Join(dataDir, "kubeconfig")
			cfg, err := clientcmd.BuildConfigFromFlags("", admin)
			if err != nil {
				return fmt.Errorf("the admin kubeconfig %s: %w", admin, err)
			}
			if server == "" {
				server = cfg.Host
			}
			ca, err := pki.LoadCA(filepath.Join(dataDir, "pki"))
			if err != nil {
				return err
			}
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			if ttl == 0 {
				ttl = -1 // kubeadm: 0 never expires
			}
			token, err := bootstrap.CreateToken(cmd.Context(), client, bootstrap.TokenOptions{Server: server, CAPEM: ca.CAPEM, TTL: ttl, Description: description})
			if err != nil {
				return err
			}
			if !printJoin {
				_, err = fmt.Fprintln(cmd.OutOrStdout(), token)
				return err
			}
			hash, err := bootstrap.CAHashOfPEM(ca.CAPEM)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "kite agent --server %s --token %s --ca-cert-hash %s\n", server, token, hash)
			return err
		},
	}
	fs := create.Flags()
	fs.StringVar(&dataDir, "data-dir", "./kite-data", "the server's data directory: the admin kubeconfig and the CA are read from it")
	fs.StringVar(&server, "server", "", "the API server's URL joining nodes use (in cluster-info and the join command); default the admin kubeconfig's")
	fs.DurationVar(&ttl, "ttl", bootstrap.DefaultTTL, "the token's lifetime; 0 never expires")
	fs.StringVar(&description, "description", "", "a description kept with the token")
	fs.BoolVar(&printJoin, "print-join-command", false, "print the whole kite agent command (server, token, CA hash) instead of the token alone")
	cmd.AddCommand(create)
	return cmd
}
