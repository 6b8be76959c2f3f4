package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/agent/cni"
	"github.com/kite-project/kite/agent/routes"
)

// podNetwork gives the pods of a containerd the agent runs their own
// addresses (agent/cni): once the Node has its podCIDRs (the node IPAM
// controller sets them), it writes the CNI configuration into the
// directory containerd watches and turns on IP forwarding. Until then
// containerd's network is not ready, and so neither is the Node.
type podNetwork struct {
	client   kubernetes.Interface
	nodeName string
	// confDir is the directory containerd's CRI plugin watches, binDir
	// the plugins', dataDir host-local's record of the addresses given.
	confDir, binDir, dataDir string
	bridge                   string
	// routes reach other nodes' pods and masquerade the pods' other
	// traffic; nil with PodRoutes "none".
	routes *routes.HostGateway
}

// newPodNetwork is the pod network of a containerd under opts.RootDir, or
// why there is none: a standalone agent has no podCIDR to take addresses
// from, and without the CNI plugins nothing can give them. Either way
// every pod then runs in the node's network, as before.
func newPodNetwork(opts *Options, cs kubernetes.Interface) (*podNetwork, error) {
	if cs == nil {
		return nil, fmt.Errorf("a standalone agent has no podCIDR")
	}
	bin, err := cni.FindBinDir(opts.CNIBinDir)
	if err != nil {
		return nil, err
	}
	p := &podNetwork{client: cs, nodeName: opts.NodeName, binDir: bin, bridge: opts.CNIBridge,
		confDir: filepath.Join(opts.RootDir, "cni", "net.d"), dataDir: filepath.Join(opts.RootDir, "cni", "networks")}
	switch opts.PodRoutes {
	case "", "host-gw":
		if p.routes, err = routes.New(routes.Options{Client: cs, NodeName: opts.NodeName}); err != nil {
			return nil, err
		}
	case "none":
	default:
		return nil, fmt.Errorf("pod routes %q: must be host-gw or none", opts.PodRoutes)
	}
	// containerd watches the directory from its start.
	if err := os.MkdirAll(p.confDir, 0o755); err != nil {
		return nil, fmt.Errorf("CNI configuration directory: %w", err)
	}
	return p, nil
}

// run waits for the node's podCIDRs and writes the configuration, then
// keeps the routes to other nodes' pods until ctx ends.
func (p *podNetwork) run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	cidrs, err := p.waitPodCIDRs(ctx)
	if err != nil {
		return
	}
	cfg := cni.Config{Bridge: p.bridge, PodCIDRs: cidrs, DataDir: p.dataDir}
	if err := cni.Write(p.confDir, cfg); err != nil {
		logger.Error(err, "Writing the CNI configuration; pods outside the node's network cannot start", "dir", p.confDir)
		return
	}
	changed, err := cni.EnableForwarding(cidrs)
	if err != nil {
		logger.Error(err, "Enabling IP forwarding; pods will not reach beyond the node")
	}
	bridged, err := cni.EnableBridgeNetfilter(ctx, cidrs)
	if err != nil {
		logger.Error(err, "Enabling netfilter on bridged traffic; a pod reaching a Service whose endpoint is on its own node fails")
	}
	changed = append(changed, bridged...)
	logger.Info("Pod network configured", "podCIDRs", cidrs, "bridge", cmpOr(p.bridge, cni.DefaultBridge),
		"config", filepath.Join(p.confDir, cni.ConfigFile), "plugins", p.binDir, "forwardingEnabled", changed, "routes", p.routes != nil)
	if p.routes != nil {
		p.routes.Run(ctx)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// waitPodCIDRs reads the Node until it has podCIDRs, watching it between
// reads; a node not registered yet is looked for again each second.
func (p *podNetwork) waitPodCIDRs(ctx context.Context) ([]string, error) {
	nodes := p.client.CoreV1().Nodes()
	klog.FromContext(ctx).Info("Waiting for the node's podCIDR (the node IPAM controller's, kite server --allocate-node-cidrs) before pods get their own IPs")
	for {
		n, err := nodes.Get(ctx, p.nodeName, metav1.GetOptions{})
		if err == nil {
			if cidrs := podCIDRs(n); len(cidrs) > 0 {
				return cidrs, nil
			}
			w, err := nodes.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", p.nodeName).String(), ResourceVersion: n.ResourceVersion})
			if err == nil {
				for ev := range w.ResultChan() {
					if n, ok := ev.Object.(*v1.Node); ok && len(podCIDRs(n)) > 0 {
						w.Stop()
						return podCIDRs(n), nil
					}
				}
				w.Stop()
				continue // the watch ended: read again
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// podCIDRs are the node's podCIDRs (podCIDR alone on a node written
// before there were several).
func podCIDRs(n *v1.Node) []string {
	if len(n.Spec.PodCIDRs) > 0 {
		return n.Spec.PodCIDRs
	}
	if n.Spec.PodCIDR != "" {
		return []string{n.Spec.PodCIDR}
	}
	return nil
}
