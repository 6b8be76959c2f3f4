package main

import (
	"errors"

	"github.com/spf13/pflag"

	"github.com/kite-project/kite/storage/etcd/backend"
	"github.com/kite-project/kite/storage/etcd/embedded"
)

// embeddedFlags are the flags of the in-process etcd, named as etcd names
// them. Kite runs a single member, so each URL flag takes one URL.
type embeddedFlags struct {
	dataDir          string
	listenClientURLs string
	listenPeerURLs   string
	unsafeNoFsync    bool
}

func (f *embeddedFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.dataDir, "data-dir", "./kite-data", "directory for Kite's data: etcd/ holds the embedded etcd's files, pki/etcd/ its CA and the API server's client certificate, pki/ the API server's CA, certificate and admin token, kubeconfig the admin kubeconfig")
	fs.StringVar(&f.listenClientURLs, "listen-client-urls", "", "URL the embedded etcd serves clients on, https://host:port (default https://127.0.0.1 on a free port); it serves only TLS, to clients with a certificate of its CA, kept with the client certificate in <data-dir>/"+embedded.PKIDir)
	fs.StringVar(&f.listenPeerURLs, "listen-peer-urls", "", "URL the embedded etcd listens on for peers, https://host:port (default https://127.0.0.1 on a free port)")
	fs.BoolVar(&f.unsafeNoFsync, "unsafe-no-fsync", false, "do not fsync etcd's writes: faster, and a power failure can lose them (tests only)")
}

func (f *embeddedFlags) options() embedded.Options {
	return embedded.Options{
		DataDir:       f.dataDir,
		ClientURL:     f.listenClientURLs,
		PeerURL:       f.listenPeerURLs,
		UnsafeNoFsync: f.unsafeNoFsync,
	}
}

// etcdFlags choose the etcd of kite server: embedded, or an external
// cluster named as kube-apiserver names it.
type etcdFlags struct {
	embedded embeddedFlags
	servers  []string
	caFile   string
	certFile string
	keyFile  string
}

func (f *etcdFlags) add(fs *pflag.FlagSet) {
	f.embedded.add(fs)
	fs.StringSliceVar(&f.servers, "etcd-servers", nil, "client URLs of an external etcd cluster (comma-separated); when set, no etcd is embedded")
	fs.StringVar(&f.caFile, "etcd-cafile", "", "CA file to verify the external etcd servers' certificates")
	fs.StringVar(&f.certFile, "etcd-certfile", "", "client certificate for the external etcd")
	fs.StringVar(&f.keyFile, "etcd-keyfile", "", "client key for the external etcd")
}

func (f *etcdFlags) options(fs *pflag.FlagSet) (backend.Options, error) {
	if len(f.servers) > 0 {
		for _, name := range []string{"listen-client-urls", "listen-peer-urls", "unsafe-no-fsync"} {
			if fs.Changed(name) {
				return backend.Options{}, errors.New("--" + name + " configures the embedded etcd; it cannot be used with --etcd-servers")
			}
		}
	} else if f.caFile != "" || f.certFile != "" || f.keyFile != "" {
		return backend.Options{}, errors.New("--etcd-cafile, --etcd-certfile and --etcd-keyfile need --etcd-servers")
	}
	return backend.Options{
		External: backend.ExternalOptions{
			Servers:  f.servers,
			CAFile:   f.caFile,
			CertFile: f.certFile,
			KeyFile:  f.keyFile,
		},
		Embedded: f.embedded.options(),
	}, nil
}
