package kubeconfig_test

import (
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kite-project/kite/kubeconfig"
)

// FuzzKubeconfigFile reads kubeconfig files as `kite agent --kubeconfig`
// does (clientcmd.BuildConfigFromFlags: an error or a config, never a
// panic). A file that loads writes back (clientcmd.Write) as one that loads
// to the same configuration.
func FuzzKubeconfigFile(f *testing.F) {
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "kubeconfig")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		clientcmd.BuildConfigFromFlags("", path) // must not panic; errors are the file's
		cfg, err := clientcmd.Load(data)
		if err != nil {
			return
		}
		written, err := clientcmd.Write(*cfg)
		if err != nil {
			t.Fatalf("a loaded kubeconfig does not write: %v", err)
		}
		back, err := clientcmd.Load(written)
		if err != nil || !apiequality.Semantic.DeepEqual(back, cfg) {
			t.Fatalf("kubeconfig written back loads differently (%v):\n%s", err, written)
		}
	})
}

// FuzzWrittenKubeconfig writes the admin kubeconfig from fuzzed options and
// reads it back as a client does: Write refuses what Build refuses (and
// what YAML cannot encode) and then leaves no file; a written file gives what RESTConfig gives (server, token, CA; an https server
// gets the token and CA given), or fails where
// RESTConfig fails.
func FuzzWrittenKubeconfig(f *testing.F) {
	f.Add("https://127.0.0.1:6443", []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), "token", "", "", "")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, server string, ca []byte, token, cluster, user, context string) {
		opts := kubeconfig.Options{Server: server, CAData: ca, Token: token, Cluster: cluster, User: user, Context: context}
		path := filepath.Join(dir, "kubeconfig")
		os.Remove(path)
		_, buildErr := kubeconfig.Build(opts)
		writeErr := kubeconfig.Write(path, opts)
		if buildErr != nil && writeErr == nil {
			t.Fatalf("Write took options Build refuses: %v", buildErr)
		}
		if writeErr != nil {
			// Refused (by Build, or YAML cannot encode it): no file, not half
			// of one.
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Fatalf("refused options (%v) left a file: %v", writeErr, err)
			}
			return
		}
		want, wantErr := kubeconfig.RESTConfig(opts)
		got, err := clientcmd.BuildConfigFromFlags("", path)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("file: %v, RESTConfig: %v", err, wantErr)
		}
		if err != nil {
			return
		}
		if got.Host != want.Host || got.BearerToken != want.BearerToken || !bytes.Equal(got.CAData, want.CAData) {
			t.Fatalf("file gives host %q token %q CA %q, RESTConfig %q %q %q", got.Host, got.BearerToken, got.CAData, want.Host, want.BearerToken, want.CAData)
		}
		// client-go sends credentials only over TLS: to an https URL with a
		// host, such as the ones Kite writes.
		if u, err := url.Parse(server); err == nil && u.Scheme == "https" && u.Host != "" && (got.BearerToken != token || !bytes.Equal(got.CAData, ca)) {
			t.Fatalf("file for %s gives token %q CA %q, want %q %q", server, got.BearerToken, got.CAData, token, ca)
		}
	})
}
