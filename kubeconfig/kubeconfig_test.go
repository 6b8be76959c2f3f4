package kubeconfig_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kite-project/kite/kubeconfig"
	"github.com/kite-project/kite/pki"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const kubectl = "/usr/bin/kubectl"

// tlsServer serves /healthz and /version over TLS with pki's certificates,
// and answers 401 unless the request carries the token.
func tlsServer(t *testing.T, token string) (*httptest.Server, *pki.Bundle) {
	t.Helper()
	b, err := pki.Ensure(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/healthz":
			io.WriteString(w, "ok")
		case "/version":
			json.NewEncoder(w).Encode(version.Info{Major: "1", Minor: "37", GitVersion: "v1.37.2-kite"})
		default:
			http.NotFound(w, r)
		}
	}))
	srv.TLS = b.TLSConfig
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, b
}

func writeKubeconfig(t *testing.T, opts kubeconfig.Options) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dir", "kubeconfig")
	if err := kubeconfig.Write(path, opts); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestWriteIsPrivateAndReplacesAtomically(t *testing.T) {
	opts := kubeconfig.Options{Server: "https://127.0.0.1:6443", CAData: []byte("ca"), Token: "t1"}
	path := writeKubeconfig(t, opts)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	opts.Token = "t2"
	if err := kubeconfig.Write(path, opts); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.AuthInfos[kubeconfig.DefaultUser].Token; got != "t2" {
		t.Errorf("token %q after rewrite, want t2", got)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the kubeconfig (temporary files left behind?)", len(entries))
	}
}

func TestWriteRefusesIncompleteOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts kubeconfig.Options
	}{
		{"no server", kubeconfig.Options{CAData: []byte("ca"), Token: "t"}},
		{"no CA", kubeconfig.Options{Server: "https://127.0.0.1:1", Token: "t"}},
		{"no token", kubeconfig.Options{Server: "https://127.0.0.1:1", CAData: []byte("ca")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kubeconfig")
			if err := kubeconfig.Write(path, tc.opts); err == nil {
				t.Fatal("Write succeeded")
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("file exists after a refused write: %v", err)
			}
		})
	}
}

func TestKubectlReadsKubeconfig(t *testing.T) {
	if _, err := os.Stat(kubectl); err != nil {
		t.Skipf("kubectl not installed: %v", err)
	}
	srv, b := tlsServer(t, "s3cret")
	path := writeKubeconfig(t, kubeconfig.Options{Server: srv.URL, CAData: b.CAPEM, Token: "s3cret"})

	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(kubectl, append([]string{"--kubeconfig", path}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	view := run("config", "view", "-o", "jsonpath={.current-context} {.clusters[0].cluster.server} {.users[0].name} {.contexts[0].context.cluster}")
	if want := "kite " + srv.URL + " kite-admin kite"; view != want {
		t.Errorf("config view = %q, want %q", view, want)
	}
	if raw := run("config", "view", "--raw", "-o", "jsonpath={.users[0].user.token}"); raw != "s3cret" {
		t.Errorf("token = %q", raw)
	}
	// A real request: TLS verified against the CA data, token sent.
	if got := run("get", "--raw", "/healthz"); strings.TrimSpace(got) != "ok" {
		t.Errorf("get --raw /healthz = %q", got)
	}
}

func TestClientGoLoadsWorkingRESTConfig(t *testing.T) {
	srv, b := tlsServer(t, "s3cret")
	opts := kubeconfig.Options{Server: srv.URL, CAData: b.CAPEM, Token: "s3cret"}
	path := writeKubeconfig(t, opts)

	fromFile, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	direct, err := kubeconfig.RESTConfig(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  *rest.Config
	}{{"loaded from file", fromFile}, {"built directly", direct}} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := kubernetes.NewForConfig(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			info, err := cs.Discovery().RESTClient().Get().AbsPath("/version").Do(context.Background()).Raw()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(info), "v1.37.2-kite") {
				t.Errorf("/version = %s", info)
			}
		})
	}

	t.Run("wrong token is rejected by the server", func(t *testing.T) {
		bad := *fromFile
		bad.BearerToken = "nope"
		cs, err := kubernetes.NewForConfig(&bad)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.Discovery().ServerVersion(); err == nil {
			t.Fatal("request with a wrong token succeeded")
		}
	})
}
