package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/agent/imagegc"
	"github.com/kite-project/kite/agent/node"
	"github.com/kite-project/kite/agent/podsync"
	"github.com/kite-project/kite/agent/runtime"
	"github.com/kite-project/kite/agent/runtime/containerd"
	"github.com/kite-project/kite/agent/runtime/cri"
	"github.com/kite-project/kite/agent/runtime/process"
)

// newPodManager builds the runtime (the process runtime under
// RootDir/runtime unless opts.Runtime is set), the pod manager over it,
// and fills in what the Node reports of the runtime: its version and its
// health. cs and events may be nil (standalone).
func (a *Agent) newPodManager(opts *Options, cs *kubernetes.Clientset) (*podsync.Manager, error) {
	if opts.RootDir == "" {
		return nil, fmt.Errorf("agent: a root directory (--root-dir) is required to run pods")
	}
	rt, err := a.newRuntime(opts, cs)
	if err != nil {
		return nil, err
	}
	a.rt = rt
	if v, err := rt.Version(context.Background()); err == nil && opts.Node.RuntimeVersion == "" {
		opts.Node.RuntimeVersion = v.RuntimeName + "://" + v.RuntimeVersion
	}
	if opts.Node.Health == nil {
		opts.Node.Health = (&runtimeHealth{rt: rt}).check
	}
	if is, ok := rt.(runtime.ImageService); ok && opts.Node.Images == nil {
		opts.Node.Images = func(ctx context.Context) []v1.ContainerImage {
			imgs, err := is.ListImages(ctx)
			if err != nil {
				klog.FromContext(ctx).Error(err, "Listing the runtime's images for the node's status")
				return nil
			}
			return node.NodeImages(imgs)
		}
	}
	if gr, ok := rt.(imagegc.Runtime); ok {
		policy := imagegc.DefaultPolicy
		if opts.ImageGC != nil {
			policy = *opts.ImageGC
		}
		// The sandbox image of the containerd Kite runs is never removed
		// (a runtime of the host's pins its own, which the collector
		// keeps as well).
		if a.imageGC, err = imagegc.New(imagegc.Options{Runtime: gr, Policy: policy, SandboxImage: containerd.PauseImage}); err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
	}
	ip := opts.Node.NodeIP
	if ip == nil {
		ip = opts.Node.Host.InternalIP()
		opts.Node.NodeIP = ip
	}
	maxPods := opts.Node.MaxPods
	if maxPods == 0 {
		maxPods = node.DefaultMaxPods
	}
	po := podsync.Options{
		NodeName:       opts.NodeName,
		Runtime:        rt,
		RootDir:        opts.RootDir,
		HostIPs:        []string{ip.String()},
		Allocatable:    node.Build(node.HostInfo(opts.Node.Host, opts.RootDir, maxPods, opts.Node.EvictionHard), nil, metav1.Now()).Allocatable,
		MaxPods:        int(maxPods),
		ClusterDNS:     opts.ClusterDNS,
		ClusterDomain:  opts.ClusterDomain,
		SeenAllSources: a.SeenAllSources,
		PodNetwork:     a.podNet != nil,
		AppArmorHost:   appArmorHost(),
	}
	if cs != nil {
		po.Client = cs
	}
	if a.events != nil {
		po.Events = a.events
	}
	m, err := podsync.New(po)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return m, nil
}

// newRuntime is opts.Runtime, or the runtime opts ask for: a CRI runtime
// at ContainerRuntimeEndpoint, a containerd child under
// RootDir/containerd, or the process runtime under RootDir/runtime. A CRI
// runtime's connection (and containerd) end with a.closeRuntime.
func (a *Agent) newRuntime(opts *Options, cs *kubernetes.Clientset) (runtime.Service, error) {
	if opts.Runtime != nil {
		return opts.Runtime, nil
	}
	ctx := context.Background()
	switch {
	case opts.ContainerRuntimeEndpoint != "":
		driver := cri.CgroupDriver(opts.CgroupDriver)
		if driver == "" {
			driver = cri.CgroupFS
			if _, err := os.Stat("/run/systemd/system"); err == nil {
				driver = cri.CgroupSystemd
			}
		}
		r, err := cri.New(ctx, cri.Options{Endpoint: opts.ContainerRuntimeEndpoint, CgroupDriver: driver, CgroupRoot: opts.CgroupRoot, PodPidsLimit: opts.PodPidsLimit, MaxParallelStarts: opts.MaxParallelStarts})
		if err != nil {
			return nil, fmt.Errorf("agent: --container-runtime-endpoint: %w", err)
		}
		a.closeRuntime = func() { r.Close() }
		return r, nil
	case opts.ContainerRuntime == "containerd":
		co := containerd.Options{Dir: filepath.Join(opts.RootDir, "containerd")}
		var client kubernetes.Interface
		if cs != nil {
			client = cs
		}
		podNet, err := newPodNetwork(opts, client)
		if err != nil {
			klog.FromContext(ctx).Info("Pods of containerd run in the node's network: no pod network", "reason", err.Error())
		} else {
			co.CNIConfDir, co.CNIBinDir = podNet.confDir, podNet.binDir
		}
		p, err := containerd.Start(ctx, co)
		if err != nil {
			return nil, fmt.Errorf("agent: --container-runtime=containerd: %w", err)
		}
		driver := cri.CgroupFS
		if p.SystemdCgroup() {
			driver = cri.CgroupSystemd
		}
		r, err := cri.New(ctx, cri.Options{Endpoint: p.Endpoint(), CgroupDriver: driver, CgroupRoot: opts.CgroupRoot, PodNetwork: podNet != nil, PodPidsLimit: opts.PodPidsLimit, MaxParallelStarts: opts.MaxParallelStarts})
		if err != nil {
			p.Stop()
			return nil, fmt.Errorf("agent: --container-runtime=containerd: %w", err)
		}
		a.podNet = podNet
		a.closeRuntime = func() {
			r.Close()
			p.Stop()
		}
		return r, nil
	case opts.ContainerRuntime == "" || opts.ContainerRuntime == "process":
		p, err := process.New(process.Options{
			RootDir:              filepath.Join(opts.RootDir, "runtime"),
			ContainerLogMaxSize:  opts.ContainerLogMaxSize,
			ContainerLogMaxFiles: opts.ContainerLogMaxFiles,
		})
		if err != nil {
			return nil, fmt.Errorf("agent: --root-dir %s: the process runtime cannot keep its state there: %w", opts.RootDir, err)
		}
		return p, nil
	}
	return nil, fmt.Errorf("agent: --container-runtime %q: want process or containerd", opts.ContainerRuntime)
}

// runtimeHealth turns the runtime's status into the Node's: not ready
// while RuntimeReady or NetworkReady is false (the kubelet's "container
// runtime is down" and "container runtime network not ready"); the other
// false conditions (no writable cgroup, no mount namespaces) are degraded
// abilities, logged once each and shown on the Node, while pods still run.
type runtimeHealth struct {
	mu     sync.Mutex
	rt     runtime.Service
	logged map[string]bool
}

func (h *runtimeHealth) check(ctx context.Context) ([]string, []v1.NodeCondition) {
	st, err := h.rt.Status(ctx)
	if err != nil {
		return []string{"container runtime is down"}, nil
	}
	var notReady []string
	var degraded []v1.NodeCondition
	for _, c := range st.Conditions {
		switch {
		case c.Status:
		case c.Type == "RuntimeReady":
			notReady = append(notReady, "container runtime is down")
		case c.Type == "NetworkReady":
			notReady = append(notReady, fmt.Sprintf("container runtime network not ready: %s: %s", c.Reason, c.Message))
		default:
			degraded = append(degraded, v1.NodeCondition{Type: v1.NodeConditionType(c.Type), Reason: c.Reason, Message: c.Message})
			h.mu.Lock()
			first := !h.logged[c.Type]
			if h.logged == nil {
				h.logged = map[string]bool{}
			}
			h.logged[c.Type] = true
			h.mu.Unlock()
			if first {
				klog.FromContext(ctx).Info("The runtime runs pods without this ability", "condition", c.Type, "reason", c.Reason, "message", c.Message)
			}
		}
	}
	return notReady, degraded
}
