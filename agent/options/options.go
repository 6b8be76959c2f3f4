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
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/net/http/httpguts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/agent/staticpod"
)

// Defaults, as the kubelet's.
const (
	DefaultFileCheckFrequency = 20 * time.Second
	DefaultHTTPCheckFrequency = 20 * time.Second
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
	// Config holds what the file and the flags set.
	Config AgentConfiguration
}

// New returns options holding the defaults.
func New() *Options {
	return &Options{Config: DefaultConfiguration()}
}

// flagFields maps each flag that has a field in the configuration file to
// the copy of that field, so that Complete can put flags over the file.
func flagFields() map[string]func(dst, src *AgentConfiguration) {
	return map[string]func(dst, src *AgentConfiguration){
		"pod-manifest-path":    func(d, s *AgentConfiguration) { d.StaticPodPath = s.StaticPodPath },
		"manifest-url":         func(d, s *AgentConfiguration) { d.StaticPodURL = s.StaticPodURL },
		"manifest-url-header":  func(d, s *AgentConfiguration) { d.StaticPodURLHeader = s.StaticPodURLHeader },
		"file-check-frequency": func(d, s *AgentConfiguration) { d.FileCheckFrequency = s.FileCheckFrequency },
		"http-check-frequency": func(d, s *AgentConfiguration) { d.HTTPCheckFrequency = s.HTTPCheckFrequency },
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
		TypeMeta:           metav1.TypeMeta{APIVersion: ConfigAPIVersion, Kind: ConfigKind},
		FileCheckFrequency: metav1.Duration{Duration: DefaultFileCheckFrequency},
		HTTPCheckFrequency: metav1.Duration{Duration: DefaultHTTPCheckFrequency},
	}
}
