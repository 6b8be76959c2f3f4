// Package manifests_test applies the install manifests that well-known
// projects publish for any Kubernetes (testdata/SOURCES.md names each and
// its commit) to a Kite that runs every controller, as a new user would
// with kubectl, and holds what kubectl says against what it said with
// kube-apiserver 1.37.2 (testdata/upstream-1.37.2, recorded as
// testdata/SOURCES.md says): every object accepted where upstream accepts
// it, refused with upstream's message where upstream refuses it.
package manifests_test

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/controllers"
	"github.com/kite-project/kite/kitetest"
)

var shared *kite.Server

// The server runs every controller, as `kite server` does: the
// manifests' Deployments, StatefulSets and Jobs are reconciled while they
// are applied, and the applies must not trip over that.
func TestMain(m *testing.M) {
	kitetest.MainWith(m, kite.Options{Controllers: controllers.All()}, func(s *kite.Server) { shared = s })
}

const kubectlPath = "/usr/bin/kubectl"

// kubectl runs kubectl against the shared server and returns its combined
// output and error. HOME is empty so that no cache from another run or
// server answers kubectl's discovery.
func kubectl(ctx context.Context, t *testing.T, args ...string) (string, error) {
	t.Helper()
	if _, err := os.Stat(kubectlPath); err != nil {
		t.Skip("kubectl not installed")
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath, append([]string{"--kubeconfig", shared.KubeconfigPath()}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// manifest gunzips testdata/name.yaml.gz into a temporary file and
// returns its path.
func manifest(t *testing.T, name string) string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name+".yaml.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("gunzip %s: %v", name, err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("gunzip %s: %v", name, err)
	}
	path := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// passes are how the recordings were made, one kubectl run each: a
// client-side apply, then a server-side apply over it (kubectl's way from
// one to the other), then the same again.
var passes = [][]string{{"apply"}, {"apply", "--server-side"}, {"apply", "--server-side"}}

// recorded returns upstream's output and exit code for each pass from
// testdata/upstream-1.37.2/name.txt: each pass's output follows a line
// "=== pass N: ..." and ends with a line "=== exit C".
func recorded(t *testing.T, name string) (outs []string, codes []int) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "upstream-1.37.2", name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	var cur strings.Builder
	for _, line := range strings.SplitAfter(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "=== pass "):
			cur.Reset()
		case strings.HasPrefix(line, "=== exit "):
			code, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "=== exit ")))
			if err != nil {
				t.Fatalf("%s: bad exit line %q", name, line)
			}
			outs, codes = append(outs, cur.String()), append(codes, code)
		default:
			cur.WriteString(line)
		}
	}
	if len(outs) != len(passes) {
		t.Fatalf("%s: %d passes recorded, want %d", name, len(outs), len(passes))
	}
	return outs, codes
}

var (
	// manifestPath is the manifest's file as kubectl names it in errors:
	// a temporary directory here, /tmp/kite-manifests in the recording.
	manifestPath = regexp.MustCompile(`"[^"]*/([a-z0-9-]+\.yaml)"`)
	// webhookCall is a failed call to a webhook whose pod cannot run:
	// where the call went after its name depends on the host (upstream
	// dials the Service's clusterIP; Kite resolves its endpoints, and
	// there are none), not on the API.
	webhookCall = regexp.MustCompile(`(failed calling webhook "[^"]+"): .*`)
)

// normalize leaves out of kubectl's output what differs between two
// servers that answer the same: the manifest's directory and where a
// failed webhook call went.
func normalize(out string) string {
	out = manifestPath.ReplaceAllString(out, `"$1"`)
	return webhookCall.ReplaceAllString(out, "$1: …")
}

// TestPublishedManifestsApplyAsOnUpstream: each published manifest is
// applied client-side, then server-side twice, and kubectl's output and
// exit code in each pass are what they were with kube-apiserver 1.37.2:
// the same objects created or applied, and the same refusals with the
// same messages (annotations too long for client-side apply, kinds that
// are not installed, conflicts over fields that client-side apply owns,
// webhooks that cannot be called).
func TestPublishedManifestsApplyAsOnUpstream(t *testing.T) {
	for _, tc := range []struct {
		name      string
		namespace string // created first and given to -n, as the project's README says
	}{
		{name: "ingress-nginx"},
		{name: "argo-cd", namespace: "argocd"},
		{name: "microservices-demo", namespace: "online-boutique"},
		{name: "prometheus-operator"},
		{name: "kubebuilder-project-v4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			path := manifest(t, tc.name)
			want, codes := recorded(t, tc.name)
			var ns []string
			if tc.namespace != "" {
				if out, err := kubectl(ctx, t, "create", "namespace", tc.namespace); err != nil {
					t.Fatalf("kubectl create namespace %s: %v\n%s", tc.namespace, err, out)
				}
				ns = []string{"-n", tc.namespace}
			}
			for i, args := range passes {
				out, err := kubectl(ctx, t, append(append(ns, args...), "-f", path)...)
				code := 0
				var exit *exec.ExitError
				if errors.As(err, &exit) {
					code = exit.ExitCode()
				} else if err != nil {
					t.Fatalf("pass %d, kubectl %s: %v", i+1, strings.Join(args, " "), err)
				}
				if got, want := normalize(out), normalize(want[i]); got != want || code != codes[i] {
					t.Errorf("pass %d, kubectl %s: exit %d, want %d (kube-apiserver 1.37.2); output:\n%s\nwant:\n%s",
						i+1, strings.Join(args, " "), code, codes[i], got, want)
				}
			}
		})
	}
}
