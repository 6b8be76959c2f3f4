package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/apiserver/authn/serviceaccount"
	"github.com/kite-project/kite/kubeconfig"
	"github.com/kite-project/kite/pki"
)

// authnFlags are the API server's authentication flags, named as
// kube-apiserver's.
type authnFlags struct {
	serviceAccountIssuer         string
	serviceAccountSigningKeyFile string
	serviceAccountKeyFiles       []string
	anonymousAuth                bool
	kubeletCertificateAuthority  string
}

func (f *authnFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.serviceAccountIssuer, "service-account-issuer", serviceaccount.DefaultIssuer, "identifier of the service account token issuer: the iss claim of the tokens it signs and the only one it accepts, and the API's audience (an https URL for its OIDC discovery at /.well-known/openid-configuration)")
	fs.StringVar(&f.serviceAccountSigningKeyFile, "service-account-signing-key-file", "", "PEM private key (RSA or ECDSA) that signs service account tokens; default <data-dir>/pki/"+pki.ServiceAccountKeyFile+", generated on first start and kept")
	fs.StringSliceVar(&f.serviceAccountKeyFiles, "service-account-key-file", nil, "PEM files of more keys (public or private) that verify service account tokens, e.g. a previous signing key (repeat the flag or separate with ',')")
	fs.StringVar(&f.kubeletCertificateAuthority, "kubelet-certificate-authority", "", "PEM CA that every agent's serving certificate must chain to when the API server dials it (logs, exec, attach, port-forward); default: certificates the cluster CA issued (kite server's agent's, joined agents' kubelet-serving ones) are verified, agents' self-signed ones are not")
	fs.BoolVar(&f.anonymousAuth, "anonymous-auth", true, "let requests without credentials go on as system:anonymous for the authorizer to judge (without an authorizer they reach only the health endpoints and the issuer discovery)")
}

func (f *authnFlags) options() kite.AuthenticationOptions {
	return kite.AuthenticationOptions{
		ServiceAccountIssuer:         f.serviceAccountIssuer,
		ServiceAccountSigningKeyFile: f.serviceAccountSigningKeyFile,
		ServiceAccountKeyFiles:       f.serviceAccountKeyFiles,
		DisableAnonymousAuth:         !f.anonymousAuth,
		KubeletCertificateAuthority:  f.kubeletCertificateAuthority,
	}
}

func newKubeconfigCommand() *cobra.Command {
	var (
		dataDir, user, server, output string
		groups                        []string
	)
	cmd := &cobra.Command{
		Use:   "kubeconfig --user NAME [--group GROUP]... [-o FILE]",
		Short: "Write a kubeconfig for a user, with a client certificate from the cluster CA",
		Long: `Write a kubeconfig for a user of the cluster whose data directory is
--data-dir: a client certificate from its CA under <data-dir>/pki, with the
user as common name and the groups as organizations (what kube-apiserver's
client certificate authentication reads), valid a year. The server URL is
the admin kubeconfig's unless --server says otherwise. The user may do what
the authorizer lets it; --group system:masters makes an administrator.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if user == "" {
				return errors.New("--user is required")
			}
			if server == "" {
				admin := filepath.Join(dataDir, "kubeconfig")
				cfg, err := clientcmd.LoadFromFile(admin)
				if err != nil {
					return fmt.Errorf("reading the server URL from %s (or give --server): %w", admin, err)
				}
				if ctx := cfg.Contexts[cfg.CurrentContext]; ctx != nil && cfg.Clusters[ctx.Cluster] != nil {
					server = cfg.Clusters[ctx.Cluster].Server
				}
				if server == "" {
					return fmt.Errorf("no server URL in %s; give --server", admin)
				}
			}
			ca, err := pki.LoadCA(filepath.Join(dataDir, "pki"))
			if err != nil {
				return err
			}
			cert, err := ca.IssueUser(user, groups, kite.DefaultUserCertificateValidity)
			if err != nil {
				return err
			}
			certPEM, keyPEM, err := pki.PEM(cert)
			if err != nil {
				return err
			}
			opts := kubeconfig.Options{Server: server, CAData: ca.CAPEM, ClientCertData: certPEM, ClientKeyData: keyPEM, User: user}
			if output != "" {
				return kubeconfig.Write(output, opts)
			}
			cfg, err := kubeconfig.Build(opts)
			if err != nil {
				return err
			}
			data, err := clientcmd.Write(*cfg)
			if err != nil {
				return fmt.Errorf("encoding the kubeconfig of %s: %w", user, err)
			}
			_, err = cmd.OutOrStdout().Write(data)
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&dataDir, "data-dir", "./kite-data", "the server's data directory: its CA is read from <data-dir>/pki, its URL from <data-dir>/kubeconfig")
	fs.StringVar(&user, "user", "", "the user's name (the certificate's common name)")
	fs.StringArrayVar(&groups, "group", nil, "a group of the user (the certificate's organization); repeat for more")
	fs.StringVar(&server, "server", "", "the API server's URL; default the admin kubeconfig's")
	fs.StringVarP(&output, "output", "o", "", "file to write (0600); default standard output")
	return cmd
}
