package options

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// parse runs the command line the way cmd/kite will: AddFlags, Parse,
// Complete.
func parse(t *testing.T, args ...string) (*Options, []string, error) {
	t.Helper()
	o := New()
	fs := pflag.NewFlagSet("agent", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	warnings, err := o.Complete(fs)
	return o, warnings, err
}

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const fileConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: /etc/kite/manifests
staticPodURL: http://127.0.0.1:8080/pods
staticPodURLHeader:
  Authorization: ["Bearer a,b:c"]
fileCheckFrequency: 30s
httpCheckFrequency: 1m
nodeLeaseDurationSeconds: 4
`

func TestDefaults(t *testing.T) {
	o, warnings, err := parse(t)
	if err != nil || warnings != nil {
		t.Fatalf("parse: %v %v", warnings, err)
	}
	c := o.Config
	if c.FileCheckFrequency.Duration != 20*time.Second || c.HTTPCheckFrequency.Duration != 20*time.Second ||
		c.StaticPodPath != "" || c.StaticPodURL != "" || c.StaticPodURLHeader != nil || c.NodeLeaseDurationSeconds != 40 {
		t.Fatalf("defaults: %+v", c)
	}
	if s := o.Sources(); len(s) != 0 {
		t.Errorf("sources %v, want none", s)
	}
}

func TestConfigFile(t *testing.T) {
	path := writeConfig(t, fileConfig)
	o, warnings, err := parse(t, "--config", path)
	if err != nil || warnings != nil {
		t.Fatalf("parse: %v %v", warnings, err)
	}
	c := o.Config
	if c.StaticPodPath != "/etc/kite/manifests" || c.StaticPodURL != "http://127.0.0.1:8080/pods" ||
		!reflect.DeepEqual(c.StaticPodURLHeader, map[string][]string{"Authorization": {"Bearer a,b:c"}}) ||
		c.FileCheckFrequency.Duration != 30*time.Second || c.HTTPCheckFrequency.Duration != time.Minute ||
		c.NodeLeaseDurationSeconds != 4 {
		t.Fatalf("config from file: %+v", c)
	}
	if got := strings.Join(o.Sources(), ","); got != "file,http" {
		t.Errorf("sources %q, want file,http", got)
	}
}

func TestConfigFileJSONWithKubeletFields(t *testing.T) {
	path := writeConfig(t, `{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration",
	  "staticPodPath":"/m","clusterDNS":["10.0.0.10"],"authentication":{},"cgroupDriver":"systemd"}`)
	o, warnings, err := parse(t, "--config", path)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if o.Config.StaticPodPath != "/m" || o.Config.FileCheckFrequency.Duration != DefaultFileCheckFrequency || strings.Join(o.Config.ClusterDNS, ",") != "10.0.0.10" {
		t.Errorf("config %+v", o.Config)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "authentication, cgroupDriver") {
		t.Errorf("warnings %q, want one naming authentication, cgroupDriver", warnings)
	}
}

// TestEvictionHardFromTheFile: unset, the kubelet's defaults hold; given,
// only the signals it names, unless mergeDefaultEvictionSettings fills the
// others in, as the kubelet 1.37 reads its configuration.
func TestEvictionHardFromTheFile(t *testing.T) {
	const head = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
	defaults := map[string]string{"memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%", "imagefs.available": "15%", "imagefs.inodesFree": "5%"}
	merged := map[string]string{"memory.available": "100Mi", "nodefs.available": "0%", "nodefs.inodesFree": "5%", "imagefs.available": "15%", "imagefs.inodesFree": "5%"}
	tests := []struct {
		name, file string
		want       map[string]string
	}{
		{"unset", head, defaults},
		{"given", head + "evictionHard:\n  nodefs.available: 0%\n", map[string]string{"nodefs.available": "0%"}},
		{"given and merged", head + "mergeDefaultEvictionSettings: true\nevictionHard:\n  nodefs.available: 0%\n", merged},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, _, err := parse(t, "--config", writeConfig(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if got := o.Config.EvictionHardStatements(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("evictionHard in force %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFlagsOverrideFile: each flag given wins over the file; the file's
// other fields stay.
func TestFlagsOverrideFile(t *testing.T) {
	path := writeConfig(t, fileConfig)
	tests := []struct {
		name  string
		args  []string
		check func(c AgentConfiguration) bool
	}{
		{"pod-manifest-path", []string{"--pod-manifest-path=/other"}, func(c AgentConfiguration) bool {
			return c.StaticPodPath == "/other" && c.StaticPodURL == "http://127.0.0.1:8080/pods"
		}},
		{"manifest-url", []string{"--manifest-url=https://example.com/p"}, func(c AgentConfiguration) bool {
			return c.StaticPodURL == "https://example.com/p" && c.StaticPodPath == "/etc/kite/manifests"
		}},
		{"manifest-url-header replaces the file's", []string{"--manifest-url-header=X-A:1", "--manifest-url-header=X-A:2,X-B:3"}, func(c AgentConfiguration) bool {
			return reflect.DeepEqual(c.StaticPodURLHeader, map[string][]string{"X-A": {"1", "2"}, "X-B": {"3"}})
		}},
		{"file-check-frequency", []string{"--file-check-frequency=5s"}, func(c AgentConfiguration) bool {
			return c.FileCheckFrequency.Duration == 5*time.Second && c.HTTPCheckFrequency.Duration == time.Minute
		}},
		{"http-check-frequency", []string{"--http-check-frequency=7s"}, func(c AgentConfiguration) bool {
			return c.HTTPCheckFrequency.Duration == 7*time.Second && c.FileCheckFrequency.Duration == 30*time.Second
		}},
		{"image GC flags over the kubelet's defaults", []string{"--image-gc-high-threshold=90", "--minimum-image-ttl-duration=1m"}, func(c AgentConfiguration) bool {
			return *c.ImageGCHighThresholdPercent == 90 && *c.ImageGCLowThresholdPercent == 80 && c.ImageMinimumGCAge.Duration == time.Minute
		}},
		{"pod-max-pids over the kubelet's default", []string{"--pod-max-pids=256"}, func(c AgentConfiguration) bool {
			return *c.PodPidsLimit == 256
		}},
		{"pod-max-pids unset is the kubelet's default, unlimited", nil, func(c AgentConfiguration) bool {
			return *c.PodPidsLimit == -1
		}},
		{"eviction-hard replaces the defaults", []string{"--eviction-hard=nodefs.available<0%,memory.available<200Mi"}, func(c AgentConfiguration) bool {
			return reflect.DeepEqual(c.EvictionHardStatements(), map[string]string{"nodefs.available": "0%", "memory.available": "200Mi"})
		}},
		{"flag before --config", []string{"--file-check-frequency=5s", "--config=" + path}, func(c AgentConfiguration) bool {
			return c.FileCheckFrequency.Duration == 5*time.Second
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, _, err := parse(t, append([]string{"--config", path}, tc.args...)...)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if !tc.check(o.Config) {
				t.Fatalf("config %+v", o.Config)
			}
		})
	}
}

// TestCgroupRootFlagOverFile: --cgroup-root over the file's cgroupRoot
// over the default /kite, as the kubelet reads its flag and field; an
// empty value is the default.
func TestCgroupRootFlagOverFile(t *testing.T) {
	const head = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
	fromFile := writeConfig(t, head+"cgroupRoot: /kite/from-file\n")
	plain := writeConfig(t, head)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"neither", nil, "/kite"},
		{"file without it", []string{"--config", plain}, "/kite"},
		{"file", []string{"--config", fromFile}, "/kite/from-file"},
		{"flag", []string{"--cgroup-root=/kite/node-b"}, "/kite/node-b"},
		{"flag over file", []string{"--config", fromFile, "--cgroup-root=/kite/node-b"}, "/kite/node-b"},
		{"flag before file", []string{"--cgroup-root=/", "--config", fromFile}, "/"},
		{"file without it keeps the flag", []string{"--cgroup-root=/kite/node-b", "--config", plain}, "/kite/node-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, _, err := parse(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if o.Config.CgroupRoot != tc.want {
				t.Errorf("cgroupRoot %q, want %q", o.Config.CgroupRoot, tc.want)
			}
		})
	}
}

// TestPressureTransitionPeriodFlagOverFile: the kubelet's 5 minutes unless
// the file's evictionPressureTransitionPeriod or the flag says otherwise;
// 0 is kept (a pressure clears at once).
func TestPressureTransitionPeriodFlagOverFile(t *testing.T) {
	const head = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
	fromFile := writeConfig(t, head+"evictionPressureTransitionPeriod: 30s\n")
	for _, tc := range []struct {
		name string
		args []string
		want time.Duration
	}{
		{"neither", nil, 5 * time.Minute},
		{"file", []string{"--config", fromFile}, 30 * time.Second},
		{"flag", []string{"--eviction-pressure-transition-period=0"}, 0},
		{"flag over file", []string{"--config", fromFile, "--eviction-pressure-transition-period=1m"}, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, _, err := parse(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if got := o.Config.EvictionPressureTransitionPeriod.Duration; got != tc.want {
				t.Errorf("evictionPressureTransitionPeriod %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHeaderFlag(t *testing.T) {
	o, _, err := parse(t, "--manifest-url=http://127.0.0.1/p", "--manifest-url-header", "Authorization: Bearer a:b", "--manifest-url-header", "Metadata-Flavor:Google")
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	want := map[string][]string{"Authorization": {"Bearer a:b"}, "Metadata-Flavor": {"Google"}}
	if !reflect.DeepEqual(o.Config.StaticPodURLHeader, want) {
		t.Fatalf("headers %v, want %v", o.Config.StaticPodURLHeader, want)
	}
}

// TestRefused: bad input is refused with a message naming the flag or field.
func TestRefused(t *testing.T) {
	tests := []struct {
		name string
		args []string
		file string
		want string
	}{
		{"header without colon", []string{"--manifest-url-header=NoColon"}, "", `"--manifest-url-header"`},
		{"header with empty key", []string{"--manifest-url-header=:v"}, "", `"--manifest-url-header"`},
		{"header name invalid", []string{"--manifest-url=http://127.0.0.1/", "--manifest-url-header=Bad Name:v"}, "", "--manifest-url-header"},
		{"header without URL", []string{"--manifest-url-header=A:b"}, "", "without staticPodURL (--manifest-url)"},
		{"zero file check frequency", []string{"--file-check-frequency=0"}, "", "--file-check-frequency"},
		{"negative http check frequency", []string{"--http-check-frequency=-1s"}, "", "--http-check-frequency"},
		{"relative URL", []string{"--manifest-url=/pods"}, "", "--manifest-url"},
		{"bad node name", []string{"--hostname-override=Node_1"}, "", "--hostname-override"},
		{"missing config file", []string{"--config=/does/not/exist"}, "", "/does/not/exist"},
		{"wrong kind", nil, "apiVersion: v1\nkind: Pod\n", "want kubelet.config.k8s.io/v1beta1 KubeletConfiguration"},
		{"zero lease duration in file", nil, "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nnodeLeaseDurationSeconds: -1\n", "nodeLeaseDurationSeconds -1: must be positive"},
		{"image GC low threshold not below the high one", []string{"--image-gc-low-threshold=85"}, "", "imageGCLowThresholdPercent (--image-gc-low-threshold) 85 must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 85"},
		{"image GC threshold above 100 in file", nil, "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nimageGCHighThresholdPercent: 101\n", "imageGCHighThresholdPercent (--image-gc-high-threshold) 101 must be between 0 and 100, inclusive"},
		{"unknown pod routes", []string{"--pod-routes=vxlan"}, "", `--pod-routes "vxlan": want host-gw or none`},
		{"unknown eviction signal", []string{"--eviction-hard=disk.free<1Gi"}, "", `evictionHard (--eviction-hard): eviction signal "disk.free": not supported`},
		{"eviction threshold over 100% in file", nil, "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nevictionHard:\n  nodefs.available: 120%\n", "nodefs.available must be <= 100%: 120%"},
		{"relative cgroup root", []string{"--cgroup-root=kite/node-b"}, "", `cgroupRoot (--cgroup-root): cgroup root "kite/node-b": want an absolute cgroupfs path`},
		{"cgroup root with an underscore in file", nil, "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupRoot: /kite/node_b\n", `cgroupRoot (--cgroup-root): cgroup root "/kite/node_b": component "node_b" has an underscore`},
		{"negative pressure transition period", []string{"--eviction-pressure-transition-period=-1s"}, "", "evictionPressureTransitionPeriod (--eviction-pressure-transition-period) -1s: must not be negative"},
		{"bad duration in file", nil, "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfileCheckFrequency: soon\n", "decoding"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.file != "" {
				args = append(args, "--config", writeConfig(t, tc.file))
			}
			_, _, err := parse(t, args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestNodeName(t *testing.T) {
	o, _, err := parse(t, "--hostname-override=node-a")
	if err != nil {
		t.Fatal(err)
	}
	if name, err := o.NodeName(); err != nil || name != "node-a" {
		t.Fatalf("NodeName = %q, %v", name, err)
	}
	host, _ := os.Hostname()
	if name, err := New().NodeName(); err == nil && name != strings.ToLower(host) {
		t.Fatalf("NodeName without override = %q, want the host name %q lowercased", name, host)
	}
}
