package agent

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/kite-project/kite/agent/options"
)

func TestFromOptionsTakesTheCommandsSettings(t *testing.T) {
	o := options.New()
	o.KubeConfig = shared.KubeconfigPath()
	o.HostnameOverride = "opts-node"
	o.Config.StaticPodPath = t.TempDir()
	o.Config.FileCheckFrequency.Duration = 7 * time.Second
	o.Config.StaticPodURL = "http://127.0.0.1:1/pods"
	o.Config.StaticPodURLHeader = map[string][]string{"Metadata-Flavor": {"Google"}}
	o.Config.CgroupRoot = "/kite/opts-node"
	opts, err := FromOptions(o)
	if err != nil {
		t.Fatalf("FromOptions: %v", err)
	}
	if opts.NodeName != "opts-node" || opts.StaticPodPath != o.Config.StaticPodPath || opts.FileCheckFrequency != 7*time.Second ||
		opts.StaticPodURL != o.Config.StaticPodURL || opts.StaticPodURLHeader.Get("Metadata-Flavor") != "Google" ||
		opts.HTTPCheckFrequency != options.DefaultHTTPCheckFrequency || opts.CgroupRoot != "/kite/opts-node" {
		t.Errorf("FromOptions = %+v", opts)
	}
	if opts.RESTConfig == nil || opts.RESTConfig.Host != shared.URL() {
		t.Errorf("REST config %v, want one for %s", opts.RESTConfig, shared.URL())
	}
	if _, err := New(opts); err != nil {
		t.Errorf("New(FromOptions(...)): %v", err)
	}
}

func TestFromOptionsRefusesAMissingKubeconfig(t *testing.T) {
	o := options.New()
	o.HostnameOverride = "opts-node"
	o.KubeConfig = filepath.Join(t.TempDir(), "missing")
	if _, err := FromOptions(o); err == nil {
		t.Fatal("FromOptions accepted a kubeconfig that does not exist")
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for name, opts := range map[string]Options{
		"no node name":     {StaticPodPath: t.TempDir()},
		"bad manifest URL": {NodeName: "n", StaticPodURL: "ftp://x"},
		"bad node name":    {NodeName: "Not_A_Node", StaticPodPath: t.TempDir()},
	} {
		if _, err := New(opts); err == nil {
			t.Errorf("%s: New accepted %+v", name, opts)
		}
	}
}
