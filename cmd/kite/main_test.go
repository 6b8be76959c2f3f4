package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/storage/etcd/backend"
	"github.com/kite-project/kite/storage/etcd/embedded"
	"github.com/kite-project/kite/storage/watchcache"
)

// TestFlagMistakesFailBeforeStarting checks flag combinations that make no
// sense: each is refused with a message naming the flag, and nothing starts
// (none of them names a usable data dir or etcd).
func TestFlagMistakesFailBeforeStarting(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"embedded flag with external etcd", []string{"server", "--etcd-servers", "http://127.0.0.1:1", "--listen-client-urls", "http://127.0.0.1:0"}, "--listen-client-urls configures the embedded etcd"},
		{"plain etcd client URL", []string{"etcd", "--listen-client-urls", "http://127.0.0.1:0"}, "want https://host:port"},
		{"plain etcd client URL on every address", []string{"server", "--listen-client-urls", "http://0.0.0.0:2379"}, "want https://host:port"},
		{"plain etcd peer URL", []string{"apiserver", "--listen-peer-urls", "http://127.0.0.1:0"}, "want https://host:port"},
		{"TLS files without external etcd", []string{"server", "--etcd-cafile", "ca.pem"}, "need --etcd-servers"},
		{"unknown flag", []string{"server", "--no-such-flag"}, "unknown flag: --no-such-flag"},
		{"positional argument", []string{"etcd", "extra"}, `unknown command "extra"`},
		{"malformed interval", []string{"server", "--etcd-compaction-interval", "often"}, "invalid argument"},
		{"malformed port", []string{"apiserver", "--secure-port", "https"}, "invalid argument"},
		{"the server's agent uses the API next to it", []string{"server", "--kubeconfig", "kubeconfig"}, "unknown flag: --kubeconfig"},
		{"malformed manifest header", []string{"agent", "--manifest-url", "http://127.0.0.1:1/pods", "--manifest-url-header", "no-colon"}, "--manifest-url-header"},
		{"header without URL", []string{"server", "--manifest-url-header", "A:b"}, "without staticPodURL (--manifest-url)"},
		{"invalid node name", []string{"agent", "--hostname-override", "Not_A_Node"}, "--hostname-override"},
		{"missing config file", []string{"agent", "--config", "/nonexistent/kubelet.yaml"}, "agent config file"},
		{"missing kubeconfig", []string{"agent", "--kubeconfig", "/nonexistent/kubeconfig"}, "--kubeconfig /nonexistent/kubeconfig"},
		{"root dir under a regular file", []string{"agent", "--root-dir", "/etc/hostname/agent"}, "--root-dir /etc/hostname/agent"},
		{"no pods", []string{"agent", "--max-pods", "0"}, "--max-pods"},
		{"one log file", []string{"agent", "--container-log-max-files", "1"}, "--container-log-max-files"},
		{"malformed log size", []string{"agent", "--container-log-max-size", "lots"}, "--container-log-max-size"},
		{"malformed node IP", []string{"agent", "--node-ip", "node"}, "--node-ip"},
		{"relative cgroup root", []string{"agent", "--cgroup-root", "kite/node-b"}, `cgroupRoot (--cgroup-root): cgroup root "kite/node-b"`},
		{"the server's agent's cgroup root", []string{"server", "--cgroup-root", "/kite/node_b"}, `cgroupRoot (--cgroup-root): cgroup root "/kite/node_b"`},
		{"SAN that is not a name", []string{"server", "--tls-san", "kite.test", "--tls-san", "kite_test"}, `--tls-san: pki: serving certificate host "kite_test"`},
		{"malformed watch cache size", []string{"apiserver", "--watch-cache-sizes", "pods"}, "--watch-cache-sizes"},
		{"unknown controller", []string{"server", "--controllers", "scheduler,replicaset-controler"}, `--controllers: unknown controller "replicaset-controler"`},
		{"controllers without a kubeconfig", []string{"controllers"}, "--kubeconfig is required"},
		{"unknown admission plugin", []string{"server", "--enable-admission-plugins", "NamespaceLifecycle,NoSuchPlugin"}, `admission plugin "NoSuchPlugin" is unknown`},
		{"unknown controller alone", []string{"controllers", "--kubeconfig", "k", "--controllers", "nope"}, `unknown controller "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := newRootCommand()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs(tt.args)
			err := root.ExecuteContext(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			if strings.Contains(out.String(), "kite: ready") {
				t.Fatalf("kite started:\n%s", out.String())
			}
		})
	}
}

// TestSignalDuringStartIsACleanExit: a signal that arrives while etcd is
// still starting is a request to stop, not an error.
func TestSignalDuringStartIsACleanExit(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	opts := serverOptions{etcd: backend.Options{Embedded: embedded.Options{DataDir: t.TempDir(), UnsafeNoFsync: true}}}
	if err := runServer(ctx, &out, opts); err != nil {
		t.Fatalf("runServer with a cancelled context: %v", err)
	}
}

// apiOptions parses the API server's flags from args into options.
func apiOptions(t *testing.T, args []string) kite.Options {
	t.Helper()
	var f apiFlags
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	f.add(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	opts, err := f.options(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

// TestWatchCacheSizeFlags checks what --watch-cache-sizes and
// --default-watch-cache-size ask of the watch caches.
func TestWatchCacheSizeFlags(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	leases := schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	tests := []struct {
		name       string
		args       []string
		wantNil    bool
		gr         schema.GroupResource
		wantEvents int
		wantCached bool
	}{
		{"no flags: Kite's defaults", nil, true, pods, 0, false},
		{"pods off", []string{"--watch-cache-sizes", "pods#0"}, false, pods, 0, false},
		{"pods bounded", []string{"--watch-cache-sizes", "pods#5000"}, false, pods, 5000, true},
		{"others keep the default window", []string{"--watch-cache-sizes", "pods#0"}, false, leases, watchcache.DefaultMaxEvents, true},
		{"default off", []string{"--default-watch-cache-size", "0", "--watch-cache-sizes", "leases.coordination.k8s.io#100"}, false, pods, 0, false},
		{"named under default off", []string{"--default-watch-cache-size", "0", "--watch-cache-sizes", "leases.coordination.k8s.io#100"}, false, leases, 100, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := apiOptions(t, tt.args)
			if tt.wantNil {
				if opts.WatchCacheSizes != nil {
					t.Fatalf("WatchCacheSizes = %+v, want nil", opts.WatchCacheSizes)
				}
				return
			}
			events, cached := opts.WatchCacheSizes.For(tt.gr)
			if events != tt.wantEvents || cached != tt.wantCached {
				t.Fatalf("For(%s) = %d, %v; want %d, %v", tt.gr, events, cached, tt.wantEvents, tt.wantCached)
			}
		})
	}
}

// TestRequestLimitFlagsReachTheOptions checks kube-apiserver's request
// limit flags: their defaults (priority and fairness on), 0 as "no
// limit", and negative values refused with upstream's message.
func TestRequestLimitFlagsReachTheOptions(t *testing.T) {
	tests := []struct {
		args               []string
		inflight, mutating int
		minRequestTimeout  time.Duration
		apfOff             bool
	}{
		{nil, 400, 200, 30 * time.Minute, false},
		{[]string{"--max-requests-inflight", "10", "--max-mutating-requests-inflight", "0", "--min-request-timeout", "60"}, 10, -1, time.Minute, false},
		{[]string{"--enable-priority-and-fairness=false"}, 400, 200, 30 * time.Minute, true},
	}
	for _, tt := range tests {
		opts := apiOptions(t, tt.args)
		if opts.MaxRequestsInFlight != tt.inflight || opts.MaxMutatingRequestsInFlight != tt.mutating || opts.MinRequestTimeout != tt.minRequestTimeout ||
			opts.DisablePriorityAndFairness != tt.apfOff {
			t.Errorf("%v: %d, %d, %s, priority and fairness off %v; want %d, %d, %s, %v", tt.args, opts.MaxRequestsInFlight, opts.MaxMutatingRequestsInFlight, opts.MinRequestTimeout,
				opts.DisablePriorityAndFairness, tt.inflight, tt.mutating, tt.minRequestTimeout, tt.apfOff)
		}
	}
	var f apiFlags
	fs := pflag.NewFlagSet("apiserver", pflag.ContinueOnError)
	f.add(fs)
	if err := fs.Parse([]string{"--max-mutating-requests-inflight", "-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.options(t.TempDir()); err == nil || !strings.Contains(err.Error(), "--max-mutating-requests-inflight can not be negative value") {
		t.Errorf("a negative limit: %v, want upstream's refusal", err)
	}
}

// TestAPIFlagsReachTheOptions checks --profiling (on unless turned off, as
// kube-apiserver's) and --http2-max-streams-per-connection (0, the
// default, meaning kube-apiserver's 100).
func TestAPIFlagsReachTheOptions(t *testing.T) {
	tests := []struct {
		args       []string
		profiling  bool
		maxStreams int
	}{
		{nil, true, 0},
		{[]string{"--profiling=false"}, false, 0},
		{[]string{"--http2-max-streams-per-connection", "1000"}, true, 1000},
	}
	for _, tt := range tests {
		opts := apiOptions(t, tt.args)
		if opts.Profiling != tt.profiling || opts.HTTP2MaxStreamsPerConnection != tt.maxStreams {
			t.Errorf("%v: Profiling %v, HTTP2MaxStreamsPerConnection %d; want %v, %d", tt.args, opts.Profiling, opts.HTTP2MaxStreamsPerConnection, tt.profiling, tt.maxStreams)
		}
	}
}

// TestTLSSANFlagReachesTheOptions checks that --tls-san repeats and splits
// on commas, as k3s's does.
func TestTLSSANFlagReachesTheOptions(t *testing.T) {
	opts := apiOptions(t, []string{"--tls-san", "kite.test", "--tls-san", "10.0.0.7,*.nodes.test"})
	if want := []string{"kite.test", "10.0.0.7", "*.nodes.test"}; !slices.Equal(opts.ExtraSANs, want) {
		t.Errorf("ExtraSANs %v, want %v", opts.ExtraSANs, want)
	}
	if opts := apiOptions(t, nil); len(opts.ExtraSANs) != 0 {
		t.Errorf("without --tls-san, ExtraSANs %v", opts.ExtraSANs)
	}
}
