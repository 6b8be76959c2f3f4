package options

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kite-project/kite/agent/node"
)

// The configuration file's type, the kubelet's.
const (
	ConfigAPIVersion = "kubelet.config.k8s.io/v1beta1"
	ConfigKind       = "KubeletConfiguration"
)

// AgentConfiguration is the part of a KubeletConfiguration the agent reads,
// with the kubelet's field names. Other fields of a kubelet's file are
// ignored with a warning, so that one file can serve both.
type AgentConfiguration struct {
	metav1.TypeMeta `json:",inline"`
	// StaticPodPath: --pod-manifest-path.
	StaticPodPath string `json:"staticPodPath,omitempty"`
	// StaticPodURL: --manifest-url.
	StaticPodURL string `json:"staticPodURL,omitempty"`
	// StaticPodURLHeader: --manifest-url-header. Values may contain commas
	// here, which the flag cannot express.
	StaticPodURLHeader map[string][]string `json:"staticPodURLHeader,omitempty"`
	// FileCheckFrequency: --file-check-frequency.
	FileCheckFrequency metav1.Duration `json:"fileCheckFrequency,omitempty"`
	// HTTPCheckFrequency: --http-check-frequency.
	HTTPCheckFrequency metav1.Duration `json:"httpCheckFrequency,omitempty"`
	// MaxPods: --max-pods, the Node's capacity.pods.
	MaxPods int32 `json:"maxPods,omitempty"`
	// Port: --port, the agent's HTTPS port (the Node's daemon endpoint).
	Port int32 `json:"port,omitempty"`
	// ContainerLogMaxSize: --container-log-max-size, a quantity ("10Mi").
	ContainerLogMaxSize string `json:"containerLogMaxSize,omitempty"`
	// ContainerLogMaxFiles: --container-log-max-files, at least 2.
	ContainerLogMaxFiles int32 `json:"containerLogMaxFiles,omitempty"`
	// ImageGCHighThresholdPercent: --image-gc-high-threshold, the percent
	// of the image file system in use that starts an image collection.
	ImageGCHighThresholdPercent *int32 `json:"imageGCHighThresholdPercent,omitempty"`
	// ImageGCLowThresholdPercent: --image-gc-low-threshold, the percent a
	// collection frees down to.
	ImageGCLowThresholdPercent *int32 `json:"imageGCLowThresholdPercent,omitempty"`
	// ImageMinimumGCAge: --minimum-image-ttl-duration, the least age of an
	// unused image before it is collected.
	ImageMinimumGCAge metav1.Duration `json:"imageMinimumGCAge,omitempty"`
	// PodPidsLimit: --pod-max-pids, the pids.max of each pod's cgroup
	// (containerd runtime); -1 is unlimited.
	PodPidsLimit *int64 `json:"podPidsLimit,omitempty"`
	// CgroupRoot: --cgroup-root, the cgroup (cgroupfs form) under which
	// the pods' kubepods and its QoS tiers are (containerd runtime):
	// "/kite" unless told; empty is that default too. Agents sharing a
	// host want roots of their own.
	CgroupRoot string `json:"cgroupRoot,omitempty"`
	// ClusterDNS: --cluster-dns, the nameservers of ClusterFirst pods.
	ClusterDNS []string `json:"clusterDNS,omitempty"`
	// ClusterDomain: --cluster-domain.
	ClusterDomain string `json:"clusterDomain,omitempty"`
	// EvictionHard: --eviction-hard, the hard eviction thresholds by
	// signal ("memory.available": "100Mi", "nodefs.available": "10%")
	// that set the Node's pressure conditions and are held back from its
	// allocatable. Nil: the kubelet's defaults; given, only the signals
	// it names, unless MergeDefaultEvictionSettings. "0%" switches a
	// signal off.
	EvictionHard map[string]string `json:"evictionHard,omitempty"`
	// MergeDefaultEvictionSettings fills the signals EvictionHard does
	// not name with the kubelet's defaults. File only, as the kubelet's.
	MergeDefaultEvictionSettings *bool `json:"mergeDefaultEvictionSettings,omitempty"`
	// EvictionPressureTransitionPeriod: --eviction-pressure-transition-period,
	// how long a pressure condition stays after its threshold was last
	// met (5m, the kubelet's default).
	EvictionPressureTransitionPeriod metav1.Duration `json:"evictionPressureTransitionPeriod,omitempty"`
	// NodeLeaseDurationSeconds is the Node's Lease duration; the agent
	// renews it every quarter of that, as the kubelet does. File only, as
	// the kubelet's.
	NodeLeaseDurationSeconds int32 `json:"nodeLeaseDurationSeconds,omitempty"`
}

// LoadConfigFile reads a KubeletConfiguration file (YAML or JSON) over the
// defaults. It returns warnings naming the fields it ignores.
func LoadConfigFile(path string) (AgentConfiguration, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return AgentConfiguration{}, nil, fmt.Errorf("agent config file: %w", err)
	}
	cfg, warnings, err := ParseConfig(data)
	if err != nil {
		return AgentConfiguration{}, nil, fmt.Errorf("agent config file %s: %w", path, err)
	}
	return cfg, warnings, nil
}

// ParseConfig decodes a KubeletConfiguration over the defaults.
func ParseConfig(data []byte) (AgentConfiguration, []string, error) {
	js, err := utilyaml.ToJSON(data)
	if err != nil {
		return AgentConfiguration{}, nil, fmt.Errorf("not YAML or JSON: %w", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(js, &fields); err != nil {
		return AgentConfiguration{}, nil, fmt.Errorf("not an object: %w", err)
	}
	cfg := DefaultConfiguration()
	if err := json.Unmarshal(js, &cfg); err != nil {
		return AgentConfiguration{}, nil, fmt.Errorf("decoding: %w", err)
	}
	if cfg.APIVersion != ConfigAPIVersion || cfg.Kind != ConfigKind {
		return AgentConfiguration{}, nil, fmt.Errorf("apiVersion %q kind %q: want %s %s", cfg.APIVersion, cfg.Kind, ConfigAPIVersion, ConfigKind)
	}
	known := jsonNames(reflect.TypeOf(cfg))
	var ignored []string
	for name := range fields {
		if !known[name] {
			ignored = append(ignored, name)
		}
	}
	if len(ignored) == 0 {
		return cfg, nil, nil
	}
	sort.Strings(ignored)
	return cfg, []string{fmt.Sprintf("ignoring KubeletConfiguration fields the agent does not use: %s", strings.Join(ignored, ", "))}, nil
}

// jsonNames returns the JSON field names of a struct, inline ones included.
func jsonNames(t reflect.Type) map[string]bool {
	names := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && tag == "" {
			for name := range jsonNames(f.Type) {
				names[name] = true
			}
			continue
		}
		names[tag] = true
	}
	return names
}

// EvictionHardStatements are the hard eviction thresholds in force: the
// kubelet's defaults when EvictionHard is nil, EvictionHard over them when
// MergeDefaultEvictionSettings, else EvictionHard alone.
func (c *AgentConfiguration) EvictionHardStatements() map[string]string {
	if c.EvictionHard == nil {
		return node.DefaultEvictionHard()
	}
	if c.MergeDefaultEvictionSettings == nil || !*c.MergeDefaultEvictionSettings {
		return c.EvictionHard
	}
	out := node.DefaultEvictionHard()
	for k, v := range c.EvictionHard {
		out[k] = v
	}
	return out
}
