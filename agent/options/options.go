// Package options holds the node agent's settings for its pod sources: the
// kubelet's flags of the same names, and a --config file in the kubelet's
// KubeletConfiguration form (kubelet.config.k8s.io/v1beta1). Flags given on
// the command line override the file, as the kubelet's do.
//
// The command (cmd/kite) calls AddFlags on its flag set, parses it, then
// Complete with the same flag set.
package options

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/net/http/httpguts"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/agent/node"
	"github.com/kite-project/kite/agent/runtime/cri"
	"github.com/kite-project/kite/agent/staticpod"
)

// Defaults, as the kubelet's.
const (
	DefaultFileCheckFrequency   = 20 * time.Second
	DefaultHTTPCheckFrequency   = 20 * time.Second
	DefaultMaxPods              = 110
	DefaultPort                 = 10250
	DefaultContainerLogMaxSize  = "10Mi"
	DefaultContainerLogMaxFiles = 5
	// DefaultRootDir is where `kite agent` keeps its files unless told
	// (the kubelet's is /var/lib/kubelet); `kite server` uses
	// <data-dir>/agent.
	DefaultRootDir = "kite-agent"
)

// The cluster DNS of ClusterFirst pods, Kite's server's: the kube-dns
// Service at the tenth address of the default service range, and the
// default cluster domain (the kubelet has none by default).
const (
	DefaultClusterDNS    = "10.43.0.10"
	DefaultClusterDomain = "cluster.local"
)

// Options are the agent's settings.
type Options struct {
	// ConfigFile is the KubeletConfiguration file (--config).
	ConfigFile string
	// KubeConfig reaches the API server (--kubeconfig); empty: standalone.
	KubeConfig string
	// HostnameOverride is the node name (--hostname-override); empty means
	// the host name, lowercased.
	HostnameOverride string
	// RootDir holds the agent's files: pod directories, volumes, container
	// logs and the runtime's state (--root-dir).
	RootDir string
	// NodeIP is the node's InternalIP (--node-ip); empty: the address of
	// the default route's interface.
	NodeIP string
	// NodeLabels are added to the Node at registration (--node-labels).
	NodeLabels map[string]string
	// ContainerRuntime is "process" (the built-in process runtime, the
	// default) or "containerd" (a containerd child under
	// <root-dir>/containerd) (--container-runtime).
	ContainerRuntime string
	// ContainerRuntimeEndpoint is a CRI runtime's socket that runs
	// already, unix:///... (--container-runtime-endpoint); it wins over
	// ContainerRuntime.
	ContainerRuntimeEndpoint string
	// ProxyMode is the service proxy (--proxy-mode): "nftables", "none",
	// or empty for nftables where it can run (docs/proxy.md).
	ProxyMode string
	// CNIBinDir is where the CNI plugins of the containerd runtime's pod
	// network are (--cni-bin-dir); empty: /usr/lib/cni, then /opt/cni/bin.
	CNIBinDir string
	// PodRoutes is how pods of the containerd runtime reach other
	// nodes' pods (--pod-routes): host-gw or none.
	PodRoutes string
	// Config holds what the file and the flags set.
	Config AgentConfiguration
}

// New returns options holding the defaults.
func New() *Options {
	return &Options{RootDir: DefaultRootDir, Config: DefaultConfiguration()}
}

// flagFields maps each flag that has a field in the configuration file to
// the copy of that field, so that Complete can put flags over the file.
func flagFields() map[string]func(dst, src *AgentConfiguration) {
	return map[string]func(dst, src *AgentConfiguration){
		"pod-manifest-path":          func(d, s *AgentConfiguration) { d.StaticPodPath = s.StaticPodPath },
		"manifest-url":               func(d, s *AgentConfiguration) { d.StaticPodURL = s.StaticPodURL },
		"manifest-url-header":        func(d, s *AgentConfiguration) { d.StaticPodURLHeader = s.StaticPodURLHeader },
		"file-check-frequency":       func(d, s *AgentConfiguration) { d.FileCheckFrequency = s.FileCheckFrequency },
		"http-check-frequency":       func(d, s *AgentConfiguration) { d.HTTPCheckFrequency = s.HTTPCheckFrequency },
		"max-pods":                   func(d, s *AgentConfiguration) { d.MaxPods = s.MaxPods },
		"port":                       func(d, s *AgentConfiguration) { d.Port = s.Port },
		"container-log-max-size":     func(d, s *AgentConfiguration) { d.ContainerLogMaxSize = s.ContainerLogMaxSize },
		"container-log-max-files":    func(d, s *AgentConfiguration) { d.ContainerLogMaxFiles = s.ContainerLogMaxFiles },
		"image-gc-high-threshold":    func(d, s *AgentConfiguration) { d.ImageGCHighThresholdPercent = s.ImageGCHighThresholdPercent },
		"image-gc-low-threshold":     func(d, s *AgentConfiguration) { d.ImageGCLowThresholdPercent = s.ImageGCLowThresholdPercent },
		"minimum-image-ttl-duration": func(d, s *AgentConfiguration) { d.ImageMinimumGCAge = s.ImageMinimumGCAge },
		"pod-max-pids":               func(d, s *AgentConfiguration) { d.PodPidsLimit = s.PodPidsLimit },
		"cgroup-root":                func(d, s *AgentConfiguration) { d.CgroupRoot = s.CgroupRoot },
		"cluster-dns":                func(d, s *AgentConfiguration) { d.ClusterDNS = s.ClusterDNS },
		"cluster-domain":             func(d, s *AgentConfiguration) { d.ClusterDomain = s.ClusterDomain },
		"eviction-hard":              func(d, s *AgentConfiguration) { d.EvictionHard = s.EvictionHard },
		"eviction-pressure-transition-period": func(d, s *AgentConfiguration) {
			d.EvictionPressureTransitionPeriod = s.EvictionPressureTransitionPeriod
		},
	}
}

// AddFlags adds the agent's flags to fs, bound to o.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	c := &o.Config
	fs.StringVar(&o.ConfigFile, "config", o.ConfigFile, "The agent's configuration file, in KubeletConfiguration form (kubelet.config.k8s.io/v1beta1). Flags given on the command line override it.")
	fs.StringVar(&o.KubeConfig, "kubeconfig", o.KubeConfig, "Path to a kubeconfig file to reach the API server. Empty: standalone, static pods only.")
	fs.StringVar(&o.HostnameOverride, "hostname-override", o.HostnameOverride, "The node's name, instead of the host name.")
	fs.StringVar(&c.StaticPodPath, "pod-manifest-path", c.StaticPodPath, "Directory (or single file) of static pod manifests, YAML or JSON, one pod per file. Names starting with '.' and ending with '~', '.swp', '.bak', '.backup' or '.tmp' are ignored.")
	fs.StringVar(&c.StaticPodURL, "manifest-url", c.StaticPodURL, "URL serving static pods: one Pod or a PodList, YAML or JSON.")
	fs.Var(newHeaderValue(&c.StaticPodURLHeader), "manifest-url-header", "HTTP header sent with requests to --manifest-url, as 'Key:Value'; repeat the flag (or separate pairs with ',') for more.")
	fs.DurationVar(&c.FileCheckFrequency.Duration, "file-check-frequency", c.FileCheckFrequency.Duration, "Period of the full re-read of --pod-manifest-path (changes are seen at once through inotify; this is the safety net).")
	fs.DurationVar(&c.HTTPCheckFrequency.Duration, "http-check-frequency", c.HTTPCheckFrequency.Duration, "Period of the fetch of --manifest-url.")
	fs.StringVar(&o.RootDir, "root-dir", o.RootDir, "Directory of the agent's files: pod directories and volumes, container logs (pods/<namespace>_<pod>_<uid>/<container>/<restartCount>.log) and the runtime's records of its processes.")
	fs.StringVar(&o.NodeIP, "node-ip", o.NodeIP, "The node's InternalIP. Empty: the address of the interface of the default route.")
	fs.StringToStringVar(&o.NodeLabels, "node-labels", o.NodeLabels, "Labels added to the Node at registration, key=value pairs separated by ','.")
	fs.StringVar(&o.CNIBinDir, "cni-bin-dir", o.CNIBinDir, "Directory of the CNI plugins (bridge, host-local, portmap, loopback) that give pods of --container-runtime=containerd their own IPs from the node's podCIDR; empty: /usr/lib/cni, then /opt/cni/bin (docs/pod-network.md).")
	fs.StringVar(&o.ContainerRuntime, "container-runtime", o.ContainerRuntime, "The container runtime: 'process' (the default: containers as host processes, no images) or 'containerd' (pods from OCI images through the CRI; Kite runs containerd with its own configuration, socket and state under <root-dir>/containerd; needs containerd and runc installed, see docs/runtime.md).")
	fs.StringVar(&o.ContainerRuntimeEndpoint, "container-runtime-endpoint", o.ContainerRuntimeEndpoint, "The socket of a CRI runtime that runs already (unix:///run/containerd/containerd.sock); overrides --container-runtime.")
	fs.StringVar(&o.PodRoutes, "pod-routes", o.PodRoutes, "How pods of --container-runtime=containerd reach other nodes' pods: 'host-gw' (the default: a route to each other node's podCIDR through its InternalIP, which needs the nodes on one layer-2 network, see docs/network.md) or 'none' (another component routes them).")
	fs.StringVar(&o.ProxyMode, "proxy-mode", o.ProxyMode, "The service proxy: 'nftables' (Services' cluster IPs and node ports routed to their endpoints by rules in the nftables tables ip and ip6 kite-proxy, as kube-proxy's nftables mode), 'none', or empty: nftables when running as root with nft installed and the containerd runtime (pods with their own network), none otherwise (docs/proxy.md).")
	fs.Int32Var(&c.MaxPods, "max-pods", c.MaxPods, "Number of pods the node can run (its capacity.pods).")
	fs.Int32Var(&c.Port, "port", c.Port, "Port of the agent's HTTPS server (logs, exec, port-forward), the Node's daemon endpoint; 0 takes a free port.")
	fs.StringVar(&c.ContainerLogMaxSize, "container-log-max-size", c.ContainerLogMaxSize, "Size at which a container's log file is rotated, a quantity such as 10Mi.")
	fs.Int32Var(&c.ContainerLogMaxFiles, "container-log-max-files", c.ContainerLogMaxFiles, "Log files kept per container, the current one included (at least 2).")
	if c.ImageGCHighThresholdPercent == nil {
		c.ImageGCHighThresholdPercent = new(int32)
	}
	if c.ImageGCLowThresholdPercent == nil {
		c.ImageGCLowThresholdPercent = new(int32)
	}
	fs.Int32Var(c.ImageGCHighThresholdPercent, "image-gc-high-threshold", *c.ImageGCHighThresholdPercent, "The percent of the image file system in use at which unused images are removed (containerd runtime; 100 disables it).")
	fs.Int32Var(c.ImageGCLowThresholdPercent, "image-gc-low-threshold", *c.ImageGCLowThresholdPercent, "The percent of the image file system in use an image collection frees down to; not above --image-gc-high-threshold.")
	if c.PodPidsLimit == nil {
		c.PodPidsLimit = new(int64)
	}
	fs.Int64Var(c.PodPidsLimit, "pod-max-pids", *c.PodPidsLimit, "The most processes (and threads) each pod may have: its cgroup's pids.max (containerd runtime, cgroupfs driver); -1 is unlimited.")
	fs.StringVar(&c.CgroupRoot, "cgroup-root", c.CgroupRoot, "The cgroup under which the pods' cgroups are (containerd runtime), a cgroupfs path: its kubepods holds them in the kubelet's QoS tiers (<root>/kubepods/burstable/pod<uid>; under the systemd driver <root's components>-kubepods-burstable-pod<uid>.slice). Agents on one host want roots of their own (/kite/<node>), or they share the tiers' cpu shares.")
	fs.DurationVar(&c.ImageMinimumGCAge.Duration, "minimum-image-ttl-duration", c.ImageMinimumGCAge.Duration, "The least age of an unused image before it is collected.")
	fs.StringSliceVar(&c.ClusterDNS, "cluster-dns", c.ClusterDNS, "Addresses of the cluster DNS, the nameservers of pods with dnsPolicy ClusterFirst (comma-separated); empty: such pods get the host's resolver configuration. Pods of the process runtime always use the host's.")
	fs.Var(cliflag.NewLangleSeparatedMapStringString(&c.EvictionHard), "eviction-hard", "Hard eviction thresholds, signal<value pairs separated by ',' (memory.available<100Mi,nodefs.available<10%): a node under one of them reports MemoryPressure, DiskPressure or PIDPressure and is tainted so that no new pod is scheduled to it, and allocatable holds the memory and nodefs thresholds back. Unset: the kubelet's defaults (memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%,imagefs.inodesFree<5%); 0% switches a signal off.")
	fs.DurationVar(&c.EvictionPressureTransitionPeriod.Duration, "eviction-pressure-transition-period", c.EvictionPressureTransitionPeriod.Duration, "How long a MemoryPressure, DiskPressure or PIDPressure condition (and its taint) stays after its threshold was last met, so that a node at a threshold does not flap.")
	fs.StringVar(&c.ClusterDomain, "cluster-domain", c.ClusterDomain, "The cluster's domain: pods with dnsPolicy ClusterFirst search <namespace>.svc.<domain>, svc.<domain> and <domain> before the host's domains.")
}

// Complete reads the configuration file, if --config was given, and puts
// the flags that were set on fs (already parsed) over it; then it validates
// the result. It returns warnings about the file (fields the agent ignores).
func (o *Options) Complete(fs *pflag.FlagSet) (warnings []string, err error) {
	if o.ConfigFile != "" {
		fromFile, warnings, err := LoadConfigFile(o.ConfigFile)
		if err != nil {
			return nil, err
		}
		fromFlags := o.Config
		o.Config = fromFile
		fields := flagFields()
		fs.Visit(func(f *pflag.Flag) {
			if copyField := fields[f.Name]; copyField != nil {
				copyField(&o.Config, &fromFlags)
			}
		})
		if err := o.Validate(); err != nil {
			return warnings, err
		}
		return warnings, nil
	}
	return nil, o.Validate()
}

// Validate checks the options.
func (o *Options) Validate() error {
	c := &o.Config
	var errs []error
	if c.FileCheckFrequency.Duration <= 0 {
		errs = append(errs, fmt.Errorf("fileCheckFrequency (--file-check-frequency) %v: must be positive", c.FileCheckFrequency.Duration))
	}
	if c.HTTPCheckFrequency.Duration <= 0 {
		errs = append(errs, fmt.Errorf("httpCheckFrequency (--http-check-frequency) %v: must be positive", c.HTTPCheckFrequency.Duration))
	}
	if c.StaticPodURL != "" {
		u, err := url.Parse(c.StaticPodURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("staticPodURL (--manifest-url) %q: want an absolute http or https URL", c.StaticPodURL))
		}
	}
	for key, values := range c.StaticPodURLHeader {
		if !httpguts.ValidHeaderFieldName(key) {
			errs = append(errs, fmt.Errorf("staticPodURLHeader (--manifest-url-header) %q: not a valid header name", key))
		}
		for _, v := range values {
			if !httpguts.ValidHeaderFieldValue(v) {
				errs = append(errs, fmt.Errorf("staticPodURLHeader (--manifest-url-header) %q: value %q is not a valid header value", key, v))
			}
		}
	}
	if c.NodeLeaseDurationSeconds <= 0 {
		errs = append(errs, fmt.Errorf("nodeLeaseDurationSeconds %d: must be positive", c.NodeLeaseDurationSeconds))
	}
	if c.MaxPods <= 0 {
		errs = append(errs, fmt.Errorf("maxPods (--max-pods) %d: must be positive", c.MaxPods))
	}
	if c.Port < 0 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("port (--port) %d: must be between 0 (any free port) and 65535", c.Port))
	}
	if q, err := resource.ParseQuantity(c.ContainerLogMaxSize); err != nil || q.Sign() <= 0 {
		errs = append(errs, fmt.Errorf("containerLogMaxSize (--container-log-max-size) %q: want a positive quantity such as 10Mi", c.ContainerLogMaxSize))
	}
	if h, l := c.ImageGCHighThresholdPercent, c.ImageGCLowThresholdPercent; h != nil && l != nil {
		switch {
		case *h < 0 || *h > 100:
			errs = append(errs, fmt.Errorf("imageGCHighThresholdPercent (--image-gc-high-threshold) %d must be between 0 and 100, inclusive", *h))
		case *l < 0 || *l > 100:
			errs = append(errs, fmt.Errorf("imageGCLowThresholdPercent (--image-gc-low-threshold) %d must be between 0 and 100, inclusive", *l))
		case *l >= *h:
			errs = append(errs, fmt.Errorf("imageGCLowThresholdPercent (--image-gc-low-threshold) %d must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) %d", *l, *h))
		}
	}
	for _, ip := range c.ClusterDNS {
		if net.ParseIP(ip) == nil {
			errs = append(errs, fmt.Errorf("clusterDNS (--cluster-dns) %q: not an IP address", ip))
		}
	}
	if d := c.ClusterDomain; d != "" && len(validation.IsDNS1123Subdomain(strings.TrimSuffix(d, "."))) > 0 {
		errs = append(errs, fmt.Errorf("clusterDomain (--cluster-domain) %q: not a domain name", d))
	}
	if d := c.EvictionPressureTransitionPeriod.Duration; d < 0 {
		errs = append(errs, fmt.Errorf("evictionPressureTransitionPeriod (--eviction-pressure-transition-period) %v: must not be negative", d))
	}
	if _, err := node.ParseEvictionHard(c.EvictionHardStatements()); err != nil {
		errs = append(errs, fmt.Errorf("evictionHard (--eviction-hard): %w", err))
	}
	if err := cri.ValidateCgroupRoot(c.CgroupRoot); err != nil {
		errs = append(errs, fmt.Errorf("cgroupRoot (--cgroup-root): %w", err))
	}
	if c.ContainerLogMaxFiles < 2 {
		errs = append(errs, fmt.Errorf("containerLogMaxFiles (--container-log-max-files) %d: must be at least 2", c.ContainerLogMaxFiles))
	}
	if o.RootDir == "" {
		errs = append(errs, errors.New("--root-dir: must not be empty"))
	}
	if o.ContainerRuntime != "" && o.ContainerRuntime != "process" && o.ContainerRuntime != "containerd" {
		errs = append(errs, fmt.Errorf("--container-runtime %q: want process or containerd", o.ContainerRuntime))
	}
	if r := o.PodRoutes; r != "" && r != "host-gw" && r != "none" {
		errs = append(errs, fmt.Errorf("--pod-routes %q: want host-gw or none", r))
	}
	if e := o.ContainerRuntimeEndpoint; e != "" && !strings.HasPrefix(e, "unix:///") {
		errs = append(errs, fmt.Errorf("--container-runtime-endpoint %q: want a unix socket, unix:///path", e))
	}
	if o.NodeIP != "" && net.ParseIP(o.NodeIP) == nil {
		errs = append(errs, fmt.Errorf("--node-ip %q: not an IP address", o.NodeIP))
	}
	if len(c.StaticPodURLHeader) > 0 && c.StaticPodURL == "" {
		errs = append(errs, errors.New("staticPodURLHeader (--manifest-url-header) given without staticPodURL (--manifest-url)"))
	}
	if o.HostnameOverride != "" {
		if err := staticpod.ValidateNodeName(o.HostnameOverride); err != nil {
			errs = append(errs, fmt.Errorf("--hostname-override: %w", err))
		}
	}
	return errors.Join(errs...)
}

// NodeName is the node's name: --hostname-override, or the host name
// lowercased, as the kubelet.
func (o *Options) NodeName() (string, error) {
	if o.HostnameOverride != "" {
		return o.HostnameOverride, nil
	}
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("node name: reading the host name: %w", err)
	}
	name := strings.ToLower(strings.TrimSpace(host))
	if err := staticpod.ValidateNodeName(name); err != nil {
		return "", fmt.Errorf("node name from the host name (set --hostname-override): %w", err)
	}
	return name, nil
}

// Sources lists the pod sources these options configure, to give to the
// merge: a source not configured is never waited for.
func (o *Options) Sources() []string {
	var sources []string
	if o.Config.StaticPodPath != "" {
		sources = append(sources, kubetypes.FileSource)
	}
	if o.Config.StaticPodURL != "" {
		sources = append(sources, kubetypes.HTTPSource)
	}
	if o.KubeConfig != "" {
		sources = append(sources, kubetypes.APISource)
	}
	return sources
}

// DefaultConfiguration returns the configuration of an agent given nothing.
func DefaultConfiguration() AgentConfiguration {
	return AgentConfiguration{
		TypeMeta:             metav1.TypeMeta{APIVersion: ConfigAPIVersion, Kind: ConfigKind},
		FileCheckFrequency:   metav1.Duration{Duration: DefaultFileCheckFrequency},
		HTTPCheckFrequency:   metav1.Duration{Duration: DefaultHTTPCheckFrequency},
		MaxPods:              DefaultMaxPods,
		Port:                 DefaultPort,
		ContainerLogMaxSize:  DefaultContainerLogMaxSize,
		ContainerLogMaxFiles: DefaultContainerLogMaxFiles,
		// The kubelet's defaults.
		ImageGCHighThresholdPercent: ptr.To[int32](85),
		ImageGCLowThresholdPercent:  ptr.To[int32](80),
		ImageMinimumGCAge:           metav1.Duration{Duration: 2 * time.Minute},
		PodPidsLimit:                ptr.To[int64](-1),
		CgroupRoot:                  cri.DefaultCgroupRoot,
		ClusterDNS:                  []string{DefaultClusterDNS},
		ClusterDomain:               DefaultClusterDomain,
		// The kubelet's defaults.
		NodeLeaseDurationSeconds:         40,
		EvictionPressureTransitionPeriod: metav1.Duration{Duration: node.DefaultPressureTransitionPeriod},
	}
}
