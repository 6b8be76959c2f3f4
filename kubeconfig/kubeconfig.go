// Package kubeconfig writes the admin kubeconfig that kubectl and client-go
// programs use to reach Kite: one cluster (server URL and CA data), one
// user (bearer token), one context, made current.
//
// How the apiserver wires it, after pki.Ensure and pki.EnsureToken and once
// the listener is bound (so that --secure-port=0 names the real port):
//
//	opts := kubeconfig.Options{Server: "https://" + ln.Addr().String(), CAData: bundle.CAPEM, Token: token}
//	if err := kubeconfig.Write(filepath.Join(dataDir, "kubeconfig"), opts); err != nil { ... }
//	restCfg, err := kubeconfig.RESTConfig(opts) // for embedders: no file needed
package kubeconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"unicode/utf8"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Default names of the kubeconfig's entries.
const (
	DefaultCluster = "kite"
	DefaultUser    = "kite-admin"
	DefaultContext = "kite"
)

// Options describe the admin kubeconfig.
type Options struct {
	// Server is the API server's URL, e.g. https://127.0.0.1:6443. Required.
	Server string
	// CAData is the PEM CA that signed the serving certificate. Required.
	CAData []byte
	// Token is the user's bearer token (the admin's). Required unless
	// ClientCertData and ClientKeyData are set.
	Token string
	// ClientCertData and ClientKeyData are a client certificate and its
	// key in PEM (a user of "kite kubeconfig --user").
	ClientCertData, ClientKeyData []byte
	// Cluster, User and Context name the entries; DefaultCluster,
	// DefaultUser and DefaultContext when empty.
	Cluster, User, Context string
	// Mode is the file mode; 0600 when zero, because the file holds the
	// admin token (k3s users learned that 0644 hands it to every user).
	Mode os.FileMode
}

func (o Options) withDefaults() Options {
	if o.Cluster == "" {
		o.Cluster = DefaultCluster
	}
	if o.User == "" {
		o.User = DefaultUser
	}
	if o.Context == "" {
		o.Context = DefaultContext
	}
	if o.Mode == 0 {
		o.Mode = 0o600
	}
	return o
}

func (o Options) validate() error {
	switch {
	case o.Server == "":
		return fmt.Errorf("kubeconfig: Server is required")
	case len(o.CAData) == 0:
		return fmt.Errorf("kubeconfig: CAData is required for server %s", o.Server)
	case o.Token == "" && (len(o.ClientCertData) == 0 || len(o.ClientKeyData) == 0):
		return fmt.Errorf("kubeconfig: Token or a client certificate and key is required for server %s", o.Server)
	}
	// YAML carries text only: invalid UTF-8 would be written as U+FFFD and
	// read back as something else.
	for _, f := range []struct{ name, value string }{
		{"Server", o.Server}, {"Token", o.Token}, {"Cluster", o.Cluster}, {"User", o.User}, {"Context", o.Context},
	} {
		if !utf8.ValidString(f.value) {
			return fmt.Errorf("kubeconfig: %s %q is not valid UTF-8", f.name, f.value)
		}
	}
	return nil
}

// Build returns the kubeconfig as client-go's API type.
func Build(opts Options) (*clientcmdapi.Config, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	cfg := clientcmdapi.NewConfig()
	cluster := clientcmdapi.NewCluster()
	cluster.Server = opts.Server
	cluster.CertificateAuthorityData = opts.CAData
	cfg.Clusters[opts.Cluster] = cluster
	user := clientcmdapi.NewAuthInfo()
	user.Token = opts.Token
	user.ClientCertificateData, user.ClientKeyData = opts.ClientCertData, opts.ClientKeyData
	cfg.AuthInfos[opts.User] = user
	kctx := clientcmdapi.NewContext()
	kctx.Cluster = opts.Cluster
	kctx.AuthInfo = opts.User
	kctx.Namespace = "default"
	cfg.Contexts[opts.Context] = kctx
	cfg.CurrentContext = opts.Context
	return cfg, nil
}

// RESTConfig returns the *rest.Config the kubeconfig would give, without
// writing a file.
func RESTConfig(opts Options) (*rest.Config, error) {
	cfg, err := Build(opts)
	if err != nil {
		return nil, err
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: rest config for %s: %w", opts.Server, err)
	}
	return rc, nil
}

// Write writes the kubeconfig to path atomically (a temporary file in the
// same directory, synced, then renamed), so that a kubectl reading it
// concurrently sees the old or the new file, never half of one. The
// directory is created (0700) if missing.
func Write(path string, opts Options) error {
	cfg, err := Build(opts)
	if err != nil {
		return err
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("kubeconfig: encoding for %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("kubeconfig: creating %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("kubeconfig: writing %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	if err := f.Chmod(opts.withDefaults().Mode); err != nil {
		f.Close()
		return fmt.Errorf("kubeconfig: chmod %s: %w", tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("kubeconfig: writing %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("kubeconfig: syncing %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("kubeconfig: closing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("kubeconfig: renaming %s to %s: %w", tmp, path, err)
	}
	return nil
}
