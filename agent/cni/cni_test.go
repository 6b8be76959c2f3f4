package cni

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConflist(t *testing.T) {
	cases := []struct {
		name    string
		cfg     Config
		want    []string // fragments of the JSON
		wantErr bool
	}{
		{"one family: bridge kite0 as the gateway, host-local on the podCIDR, portmap",
			Config{PodCIDRs: []string{"10.42.3.0/24"}, DataDir: "/var/lib/kite/cni/networks"},
			[]string{`"bridge": "kite0"`, `"isGateway": true`, `"isDefaultGateway": true`, `"ipMasq": false`, `"hairpinMode": true`,
				`"type": "host-local"`, `"subnet": "10.42.3.0/24"`, `"dataDir": "/var/lib/kite/cni/networks"`, `"type": "portmap"`, `"portMappings": true`}, false},
		{"dual-stack: one range of each family",
			Config{Bridge: "br9", PodCIDRs: []string{"10.42.3.0/24", "fd42:0:0:3::/64"}, DataDir: "/d"},
			[]string{`"bridge": "br9"`, `"subnet": "10.42.3.0/24"`, `"subnet": "fd42:0:0:3::/64"`}, false},
		{"no podCIDR", Config{DataDir: "/d"}, nil, true},
		{"a podCIDR that is not one", Config{PodCIDRs: []string{"10.42.3.0"}, DataDir: "/d"}, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Conflist(tc.cfg)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Conflist error = %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			var conf struct {
				CNIVersion string           `json:"cniVersion"`
				Name       string           `json:"name"`
				Plugins    []map[string]any `json:"plugins"`
			}
			if err := json.Unmarshal(b, &conf); err != nil || conf.CNIVersion != "1.0.0" || conf.Name != NetworkName || len(conf.Plugins) != 2 {
				t.Fatalf("not a CNI 1.0.0 list of two plugins named %s: %v\n%s", NetworkName, err, b)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("no %s in\n%s", w, b)
				}
			}
			// The bridge adds the default route; a route of host-local's
			// too makes the plugin fail ("file exists").
			if strings.Contains(string(b), `"routes"`) {
				t.Errorf("host-local has routes:\n%s", b)
			}
		})
	}
}

func TestWriteReplacesTheFileWhole(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net.d")
	cfg := Config{PodCIDRs: []string{"10.42.0.0/24"}, DataDir: "/d"}
	if err := Write(dir, cfg); err != nil {
		t.Fatal(err)
	}
	cfg.PodCIDRs = []string{"10.42.1.0/24"}
	if err := Write(dir, cfg); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	b, _ := os.ReadFile(filepath.Join(dir, ConfigFile))
	if len(entries) != 1 || !strings.Contains(string(b), "10.42.1.0/24") {
		t.Fatalf("directory %v, file\n%s; want only %s with the second configuration", entries, b, ConfigFile)
	}
}

func TestFindBinDir(t *testing.T) {
	full, partial := t.TempDir(), t.TempDir()
	for _, p := range Plugins {
		os.WriteFile(filepath.Join(full, p), []byte("#!/bin/sh\n"), 0o755)
	}
	os.WriteFile(filepath.Join(partial, "bridge"), []byte("#!/bin/sh\n"), 0o755)
	if got, err := FindBinDir(full); err != nil || got != full {
		t.Errorf("FindBinDir(full) = %q, %v", got, err)
	}
	if _, err := FindBinDir(partial); err == nil || !strings.Contains(err.Error(), "containernetworking-plugins") {
		t.Errorf("FindBinDir(a directory without host-local, portmap, loopback) = %v; want an error saying what to install", err)
	}
}
