// Package volumes is the runner around containerconfig's pure Build: it
// materialises a pod's volumes under <root>/pods/<uid>/volumes (emptyDir
// directories, hostPath checks, the files of configMap, secret,
// downwardAPI and projected volumes written atomically), and gathers what
// Build reads besides the pod: the configMaps and secrets the pod refers
// to, read through an informer-backed cache (package objectcache, as the
// kubelet's watch-based managers) rather than a GET per container start,
// the node's facts, the volumes' paths and the restart count.
package volumes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/agent/containerconfig"
	"github.com/kite-project/kite/agent/objectcache"
	"github.com/kite-project/kite/agent/podruntime"
	"github.com/kite-project/kite/listwatch"
)

// Client lists and watches the configMaps and secrets that pods refer
// to, asks for the ServiceAccount tokens of their projected volumes, and
// reads the claims of their persistentVolumeClaim volumes and the
// PersistentVolumes bound to them (claims.go).
type Client interface {
	corev1client.ConfigMapsGetter
	corev1client.SecretsGetter
	corev1client.ServiceAccountsGetter
	corev1client.ServicesGetter
	corev1client.PersistentVolumeClaimsGetter
	corev1client.PersistentVolumesGetter
}

// Options configures a Manager.
type Options struct {
	// RootDir is the agent's --root-dir: volumes go under
	// <RootDir>/pods/<uid>/volumes. Required.
	RootDir string
	// LogDir holds the pods' log directories, <LogDir>/<ns>_<pod>_<uid>;
	// <RootDir>/pods when empty.
	LogDir string
	// Client reads configMaps and secrets; nil (standalone) makes every
	// reference to one an error.
	Client Client
	// NodeName, HostIPs and Allocatable are the node's facts that
	// configurations read (containerconfig.Inputs).
	NodeName    string
	HostIPs     []string
	Allocatable v1.ResourceList
	// RunsImages says that the runtime runs containers from images
	// (containerconfig.Inputs.RunsImages).
	RunsImages bool
	// PodNetwork is containerconfig.Inputs.PodNetwork.
	PodNetwork bool
	// HostDNS is the node's resolv.conf, the base of pods' dnsConfig.
	HostDNS *runtimeapi.DNSConfig
	// ClusterDNS and ClusterDomain are the cluster DNS's addresses and
	// the cluster's domain (containerconfig.Inputs, PodDNS).
	ClusterDNS    []string
	ClusterDomain string
	// SyncTimeout bounds the wait for a configMap's or secret's first
	// list; zero is objectcache's default.
	SyncTimeout time.Duration
}

// Manager sets up pods' volumes and builds their containers'
// configurations. It is safe for concurrent use; its caches watch while
// Run runs.
type Manager struct {
	opts       Options
	logDir     string
	configMaps *objectcache.Cache[*v1.ConfigMap] // nil without a client
	secrets    *objectcache.Cache[*v1.Secret]
	tokens     *tokens // nil without a client
	services   *services
	claims     *claimMounts
	// imageLocks serialise, per image digest, the unpacking and linking
	// of its image volumes' copy with its collection (image.go): no lock
	// is held across another image's work.
	imageLocks digestLocks
}

// DirMode is the mode of the root directory and of its pods directory,
// which hold every pod's volumes (secrets among them) and logs, as the
// kubelet makes /var/lib/kubelet and its pods directory 0750: a volume's
// files keep the modes their pod asks for (a secret's default is 0644, as
// upstream), and only root and the root directory's group may reach
// them. A container reads its volumes through the bind mount at its
// mountPath, which needs no access to the tree above.
const DirMode = 0o750

// New returns a Manager. It makes the root directory and its pods
// directory (DirMode), and gives an existing one that mode: a root
// directory that other users can traverse would open every pod's secrets
// to them.
func New(opts Options) (*Manager, error) {
	if opts.RootDir == "" {
		return nil, errors.New("volumes: no root directory given")
	}
	m := &Manager{opts: opts, logDir: opts.LogDir, claims: &claimMounts{byPod: map[types.UID]map[string]claimMount{}}}
	if m.logDir == "" {
		m.logDir = filepath.Join(opts.RootDir, "pods")
	}
	for _, dir := range []string{opts.RootDir, filepath.Join(opts.RootDir, "pods")} {
		if err := os.MkdirAll(dir, DirMode); err != nil {
			return nil, fmt.Errorf("volumes: %w", err)
		}
		if err := os.Chmod(dir, DirMode); err != nil {
			return nil, fmt.Errorf("volumes: %w", err)
		}
	}
	if c := opts.Client; c != nil {
		m.tokens = &tokens{client: c, now: time.Now, byKey: map[tokenKey]boundToken{}}
		var err error
		if m.services, err = newServices(c, cmp.Or(opts.SyncTimeout, objectcache.DefaultSyncTimeout)); err != nil {
			return nil, fmt.Errorf("volumes: %w", err)
		}
		m.configMaps, err = objectcache.New(objectcache.Options[*v1.ConfigMap]{
			Resource: schema.GroupResource{Resource: "configmaps"},
			ListerWatcher: func(ns string) listwatch.ListerWatcher {
				return listwatch.FromTypedClient[*v1.ConfigMapList](c.ConfigMaps(ns), nil)
			},
			IsImmutable: func(cm *v1.ConfigMap) bool { return cm.Immutable != nil && *cm.Immutable },
			SyncTimeout: opts.SyncTimeout,
		})
		if err != nil {
			return nil, fmt.Errorf("volumes: %w", err)
		}
		m.secrets, err = objectcache.New(objectcache.Options[*v1.Secret]{
			Resource: schema.GroupResource{Resource: "secrets"},
			ListerWatcher: func(ns string) listwatch.ListerWatcher {
				return listwatch.FromTypedClient[*v1.SecretList](c.Secrets(ns), nil)
			},
			IsImmutable: func(s *v1.Secret) bool { return s.Immutable != nil && *s.Immutable },
			SyncTimeout: opts.SyncTimeout,
		})
		if err != nil {
			return nil, fmt.Errorf("volumes: %w", err)
		}
	}
	return m, nil
}

// Run watches the configMaps and secrets pods refer to, and the
// Services, until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	// Copies of image volumes whose pods went while the agent was down.
	if err := m.CollectImageVolumes(); err != nil {
		klog.FromContext(ctx).Error(err, "Collecting unused image volumes")
	}
	if m.configMaps == nil {
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { m.services.reflector.Run(ctx) })
	wg.Go(func() { m.sweepLocalPath(ctx) })
	wg.Go(func() { m.configMaps.Run(ctx) })
	wg.Go(func() { m.secrets.Run(ctx) })
	wg.Wait()
}

// Forget stops watching what pod uid referred to (unless another pod
// refers to it): its worker is gone.
func (m *Manager) Forget(uid types.UID) {
	m.claims.forget(uid)
	if m.configMaps != nil {
		m.configMaps.Forget(uid)
		m.secrets.Forget(uid)
		m.tokens.forget(uid)
	}
}

// PodDir is the pod's directory under the root: <root>/pods/<uid>.
func (m *Manager) PodDir(pod *v1.Pod) string {
	return filepath.Join(m.opts.RootDir, "pods", string(pod.UID))
}

// RemovePodDir removes the pod's directory (its volumes) once its
// containers are gone, and then the copies of image volumes no pod uses
// any more. hostPath volumes are never under it.
func (m *Manager) RemovePodDir(pod *v1.Pod) error {
	if err := os.RemoveAll(m.PodDir(pod)); err != nil {
		return err
	}
	return m.CollectImageVolumes()
}

// LogDirectory is the pod's log directory.
func (m *Manager) LogDirectory(pod *v1.Pod) string {
	return containerconfig.LogDirectory(m.logDir, pod)
}

// TerminationMessageFile is the host file bound at the terminationMessagePath
// of the container's instance of restartCount.
func (m *Manager) TerminationMessageFile(pod *v1.Pod, container string, restartCount int) string {
	return containerconfig.TerminationMessageFile(m.PodDir(pod), container, restartCount)
}

// createTerminationMessageFile creates an instance's termination-message
// file, empty and writable by any user: the kubelet chmods it 0666,
// whatever the umask, so that a container running as non-root can write
// its message.
func createTerminationMessageFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, nil, 0o666); err != nil {
		return err
	}
	return os.Chmod(path, 0o666)
}

// NextRestartCount is the restart count of the container's next instance
// (containerconfig.NextRestartCount over its log directory).
func (m *Manager) NextRestartCount(pod *v1.Pod, container string, last *podruntime.Container) int {
	var names []string
	if last == nil {
		entries, _ := os.ReadDir(filepath.Join(m.LogDirectory(pod), container))
		for _, e := range entries {
			names = append(names, e.Name())
		}
	}
	return containerconfig.NextRestartCount(last, names)
}

// SandboxConfig is the pod's sandbox configuration for attempt.
func (m *Manager) SandboxConfig(pod *v1.Pod, attempt uint32) *runtimeapi.PodSandboxConfig {
	return containerconfig.SandboxConfig(pod, m.node(pod), attempt)
}

// DNSWarnings are the events the pod's resolver configuration calls for
// (containerconfig.PodDNS), for a runtime that runs images: the process
// runtime's containers use the host's resolver whatever the policy.
func (m *Manager) DNSWarnings(pod *v1.Pod) []containerconfig.DNSWarning {
	if !m.opts.RunsImages {
		return nil
	}
	_, w := containerconfig.PodDNS(pod, m.node(pod))
	return w
}

// node is the Inputs of the node's facts, for pod.
func (m *Manager) node(pod *v1.Pod) containerconfig.Inputs {
	return containerconfig.Inputs{NodeName: m.opts.NodeName, HostIPs: m.opts.HostIPs, Allocatable: m.opts.Allocatable, LogDirectory: m.LogDirectory(pod), PodDir: m.PodDir(pod),
		SeccompProfileRoot: filepath.Join(m.opts.RootDir, "seccomp"),
		RunsImages:         m.opts.RunsImages, HostDNS: m.opts.HostDNS, ClusterDNS: m.opts.ClusterDNS, ClusterDomain: m.opts.ClusterDomain, PodNetwork: m.opts.PodNetwork}
}

// inputs are the Inputs of pod: the node's facts and the configMaps and
// secrets it refers to, which are watched from now on (until Forget).
func (m *Manager) inputs(ctx context.Context, pod *v1.Pod) containerconfig.Inputs {
	in := m.node(pod)
	configMaps, secrets := containerconfig.References(pod)
	in.ConfigMaps = lookups(ctx, m.configMaps, pod, configMaps, "configMap")
	in.Secrets = lookups(ctx, m.secrets, pod, secrets, "secret")
	if m.tokens != nil {
		in.ServiceAccountToken = func(src *v1.ServiceAccountTokenProjection) ([]byte, error) {
			return m.tokens.get(ctx, pod, src)
		}
	}
	return in
}

// lookups reads names of pod's namespace through cache, which watches
// them from now on; without a cache each is an error, upstream's.
func lookups[T interface {
	*v1.ConfigMap | *v1.Secret
	runtime.Object
}](ctx context.Context, cache *objectcache.Cache[T], pod *v1.Pod, names []string, kind string) map[string]containerconfig.Lookup[T] {
	out := make(map[string]containerconfig.Lookup[T], len(names))
	if cache == nil {
		for _, name := range names {
			out[name] = containerconfig.Lookup[T]{Err: fmt.Errorf("couldn't get %s %v/%v, no kubeClient defined", kind, pod.Namespace, name)}
		}
		return out
	}
	cache.Set(pod.UID, pod.Namespace, names)
	for _, name := range names {
		obj, err := cache.Get(ctx, pod.Namespace, name)
		out[name] = containerconfig.Lookup[T]{Object: obj, Err: err}
	}
	return out
}

// ContainerConfig is the configuration of the container's next instance
// (containerconfig.Build), restartCount its restart count and volumes the
// host paths SetUp returned, imageUser the user of the container's image
// (nil: unknown, or no image). A subPath missing in its volume is created,
// as upstream's makeMounts does.
func (m *Manager) ContainerConfig(ctx context.Context, pod *v1.Pod, c *v1.Container, restartCount int, volumes map[string]string, imageUser *containerconfig.ImageUser, podIPs []string) (*runtimeapi.ContainerConfig, error) {
	in := m.inputs(ctx, pod)
	in.RestartCount, in.Volumes, in.ImageUser, in.PodIPs = restartCount, volumes, imageUser, podIPs
	if m.services != nil {
		svcs, err := m.services.of(ctx, pod)
		if err != nil {
			return nil, err
		}
		in.Services = svcs
	}
	cfg, err := containerconfig.Build(pod, c, in)
	if err != nil {
		return nil, err
	}
	m.readOnlyClaims(pod, c, cfg)
	if err := imageVolumeMounts(pod, c, volumes, cfg); err != nil {
		return nil, err
	}
	if c.TerminationMessagePath != "" {
		if err := createTerminationMessageFile(m.TerminationMessageFile(pod, c.Name, restartCount)); err != nil {
			return nil, fmt.Errorf("termination message file of container %q: %w", c.Name, err)
		}
	}
	if err := writeHostsFile(pod, cfg, m.PodDir(pod), in); err != nil {
		return nil, err
	}
	for _, mount := range cfg.Mounts {
		if isVolume(volumes, mount.HostPath) {
			continue
		}
		if _, err := os.Stat(mount.HostPath); os.IsNotExist(err) {
			if err := os.MkdirAll(mount.HostPath, 0o755); err != nil {
				return nil, fmt.Errorf("subPath %s of a volume mounted at %s: %w", mount.HostPath, mount.ContainerPath, err)
			}
		}
	}
	return cfg, nil
}

// isVolume says whether path is one of the volumes' own paths (a mount
// without a subPath).
func isVolume(volumes map[string]string, path string) bool {
	for _, p := range volumes {
		if p == path {
			return true
		}
	}
	return false
}

// SetUp materialises the pod's volumes under its directory and returns
// the host path of each by volume name. It is safe to call again: content
// volumes (configMap, secret, downwardAPI, projected) are rewritten
// atomically; an emptyDir keeps what is in it. An error says which volume
// failed and why, as upstream's "MountVolume.SetUp failed for volume ..."
// message.
func (m *Manager) SetUp(ctx context.Context, pod *v1.Pod) (map[string]string, error) {
	in := m.inputs(ctx, pod)
	paths := map[string]string{}
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.Image != nil {
			// Pulled and unpacked before each container start
			// (ImageVolume), as the kubelet pulls them.
			if !m.opts.RunsImages {
				return nil, fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", vol.Name, ErrImageVolumeUnsupported)
			}
			continue
		}
		if vol.PersistentVolumeClaim != nil {
			path, err := m.claimPath(ctx, pod, vol)
			if err != nil {
				return nil, fmt.Errorf("Unable to attach or mount volumes: unmounted volumes=[%s], unattached volumes=[], failed to process volumes=[%s]: %w", vol.Name, vol.Name, err)
			}
			paths[vol.Name] = path
			continue
		}
		path, err := m.setUp(pod, vol, in)
		if err != nil {
			return nil, fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", vol.Name, err)
		}
		paths[vol.Name] = path
	}
	return paths, nil
}

func (m *Manager) setUp(pod *v1.Pod, vol *v1.Volume, in containerconfig.Inputs) (string, error) {
	if vol.HostPath != nil {
		return vol.HostPath.Path, hostPath(vol.HostPath)
	}
	plugin := containerconfig.Plugin(vol)
	if plugin == "" {
		return "", containerconfig.ErrUnsupportedVolume
	}
	dir := filepath.Join(m.PodDir(pod), "volumes", plugin, vol.Name)
	fsGroup := fsGroupOf(pod)
	if vol.EmptyDir != nil {
		if _, err := os.Stat(dir); err == nil {
			return dir, nil // set up before: its content is the pod's
		}
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return "", err
		}
		// MkdirAll's mode is cut by the umask; upstream's emptyDir is 0777.
		if err := os.Chmod(dir, 0o777); err != nil {
			return "", err
		}
		return dir, setOwnership(dir, fsGroup, false)
	}
	files, err := containerconfig.Files(pod, vol, in)
	if err != nil {
		return "", err
	}
	if err := writeAtomic(dir, files); err != nil {
		return "", err
	}
	// Content volumes are read-only to their pod, as upstream's
	// configMap, secret, downwardAPI and projected mounters say.
	return dir, setOwnership(dir, fsGroup, true)
}

func fsGroupOf(pod *v1.Pod) *int64 {
	if sc := pod.Spec.SecurityContext; sc != nil {
		return sc.FSGroup
	}
	return nil
}

func hostPath(hp *v1.HostPathVolumeSource) error {
	t := v1.HostPathUnset
	if hp.Type != nil {
		t = *hp.Type
	}
	switch t {
	case v1.HostPathDirectoryOrCreate:
		return os.MkdirAll(hp.Path, 0o755)
	case v1.HostPathDirectory:
		if fi, err := os.Stat(hp.Path); err != nil || !fi.IsDir() {
			return fmt.Errorf("hostPath type check failed: %s is not a directory", hp.Path)
		}
	case v1.HostPathFile:
		if fi, err := os.Stat(hp.Path); err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("hostPath type check failed: %s is not a file", hp.Path)
		}
	}
	return nil
}

// writeHostsFile writes the pod's managed hosts file when cfg binds it, as
// the kubelet's makeHostsMount before each container: from the node's
// /etc/hosts for a pod on the node's network.
func writeHostsFile(pod *v1.Pod, cfg *runtimeapi.ContainerConfig, podDir string, in containerconfig.Inputs) error {
	path := containerconfig.HostsFile(podDir)
	for _, mount := range cfg.Mounts {
		if mount.HostPath != path {
			continue
		}
		var nodeHosts []byte
		if pod.Spec.HostNetwork || !in.PodNetwork {
			b, err := os.ReadFile(containerconfig.EtcHostsPath)
			if err != nil {
				return fmt.Errorf("hosts file of pod %s/%s: %w", pod.Namespace, pod.Name, err)
			}
			nodeHosts = b
		}
		if err := os.MkdirAll(podDir, DirMode); err != nil {
			return fmt.Errorf("hosts file of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		if err := os.WriteFile(path, containerconfig.HostsContent(pod, in, nodeHosts), 0o644); err != nil {
			return fmt.Errorf("hosts file of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		return os.Chmod(path, 0o644)
	}
	return nil
}
