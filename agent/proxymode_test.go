package agent

import (
	"os"
	"os/exec"
	"testing"

	"github.com/kite-project/kite/agent/options"
)

func TestProxyModeDefaultsToNftablesOnlyForContainerdAsRootWithNft(t *testing.T) {
	_, noNft := exec.LookPath("nft")
	canRun := os.Geteuid() == 0 && noNft == nil
	for _, tc := range []struct {
		name string
		edit func(*options.Options)
		want string
	}{
		{"the process runtime gets none", func(*options.Options) {}, ProxyNone},
		{"the containerd runtime gets nftables where it can run", func(o *options.Options) { o.ContainerRuntime = "containerd" }, map[bool]string{true: ProxyNFTables, false: ProxyNone}[canRun]},
		{"a CRI endpoint gets nftables where it can run", func(o *options.Options) { o.ContainerRuntimeEndpoint = "unix:///run/x.sock" }, map[bool]string{true: ProxyNFTables, false: ProxyNone}[canRun]},
		{"a mode given wins", func(o *options.Options) { o.ContainerRuntime, o.ProxyMode = "containerd", ProxyNone }, ProxyNone},
		{"nftables given wins", func(o *options.Options) { o.ProxyMode = ProxyNFTables }, ProxyNFTables},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options.New()
			tc.edit(o)
			if got := ProxyModeFor(o); got != tc.want {
				t.Errorf("ProxyModeFor = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNewRefusesAProxyItCannotRun(t *testing.T) {
	for name, opts := range map[string]Options{
		"unknown mode":         {NodeName: "n", StaticPodPath: t.TempDir(), ProxyMode: "iptables", SyncLoop: LogSyncLoop{}},
		"nftables without API": {NodeName: "n", StaticPodPath: t.TempDir(), ProxyMode: ProxyNFTables, SyncLoop: LogSyncLoop{}},
	} {
		if _, err := New(opts); err == nil {
			t.Errorf("%s: New accepted %+v", name, opts)
		}
	}
}
