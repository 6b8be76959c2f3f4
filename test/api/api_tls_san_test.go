package api_test

import (
	"os"
	"strings"
	"testing"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite"
)

// TestExtraSANsNameTheServingCertificate starts Kite with extra SANs, as
// --tls-san gives them, and verifies the server under each name with the
// CA of the admin kubeconfig; a restart with another set reissues the
// certificate from the same CA: the new name verifies, the dropped one
// does not, and a client holding the first run's CA still connects.
func TestExtraSANsNameTheServingCertificate(t *testing.T) {
	dir := t.TempDir()
	start := func(sans ...string) *kite.Server {
		t.Helper()
		srv, err := kite.Start(t.Context(), kite.Options{DataDir: dir, EtcdUnsafeNoFsync: true, ExtraSANs: sans})
		if err != nil {
			t.Fatalf("Start with ExtraSANs %v: %v", sans, err)
		}
		return srv
	}
	// verify asks for /version with the TLS server name set to name,
	// trusting only ca: what a client on another host that dials name does.
	verify := func(srv *kite.Server, ca []byte, name string) error {
		cfg := srv.RESTConfig()
		cfg.TLSClientConfig = rest.TLSClientConfig{ServerName: name, CAData: ca}
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = dc.ServerVersion()
		return err
	}

	srv := start("kite.test", "10.1.2.3")
	firstCA := srv.RESTConfig().CAData
	for _, name := range []string{"kite.test", "10.1.2.3", "127.0.0.1", "localhost"} {
		if err := verify(srv, firstCA, name); err != nil {
			t.Errorf("server name %s: %v", name, err)
		}
	}
	if err := verify(srv, firstCA, "other.test"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("server name other.test, not a SAN: %v, want a certificate error", err)
	}
	srv.Close()

	srv = start("kite.test", "other.test")
	defer srv.Close()
	if string(srv.RESTConfig().CAData) != string(firstCA) {
		t.Error("a new SAN set replaced the CA")
	}
	for name, ok := range map[string]bool{"other.test": true, "kite.test": true, "10.1.2.3": false} {
		if err := verify(srv, firstCA, name); (err == nil) != ok {
			t.Errorf("after the restart, server name %s: %v, want success %v", name, err, ok)
		}
	}
}

// TestBadExtraSANIsRefusedBeforeStarting checks that a SAN that is neither
// a name nor an IP fails the start and leaves the data dir untouched.
func TestBadExtraSANIsRefusedBeforeStarting(t *testing.T) {
	dir := t.TempDir()
	_, err := kite.Start(t.Context(), kite.Options{DataDir: dir + "/data", EtcdUnsafeNoFsync: true, ExtraSANs: []string{"https://kite.test"}})
	if err == nil || !strings.Contains(err.Error(), `"https://kite.test"`) {
		t.Fatalf("Start: %v, want an error naming the SAN", err)
	}
	if _, err := os.Stat(dir + "/data"); !os.IsNotExist(err) {
		t.Errorf("the refused start made its data dir (stat: %v)", err)
	}
}

// TestBindAddressIsInTheServingCertificate binds to one loopback address
// other than 127.0.0.1: the kubeconfig names it, and the certificate does
// too without any ExtraSANs, as kube-apiserver's names its address.
func TestBindAddressIsInTheServingCertificate(t *testing.T) {
	srv, err := kite.Start(t.Context(), kite.Options{EtcdUnsafeNoFsync: true, BindAddress: "127.0.0.2"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if !strings.HasPrefix(srv.URL(), "https://127.0.0.2:") {
		t.Fatalf("URL %s, want the bind address", srv.URL())
	}
	// The admin config verifies the server by the name in its URL.
	dc, err := discovery.NewDiscoveryClientForConfig(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dc.ServerVersion(); err != nil {
		t.Fatalf("GET /version at %s: %v", srv.URL(), err)
	}
}
