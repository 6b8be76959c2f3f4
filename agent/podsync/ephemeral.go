package podsync

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/containerconfig"
	"github.com/kite-project/kite/agent/podruntime"
)

// targetNamespaces makes cfg, an ephemeral container's configuration with
// a targetContainerName, join its target's process namespace, as the
// kubelet does (NamespaceMode TARGET with the target's runtime ID) where
// the pod gives each container its own; with shareProcessNamespace or
// hostPID the target is in the pod's or the node's already and cfg keeps
// that mode. The other namespaces are the pod's, as cfg has them. A target
// the runtime does not have is an error (the kubelet's "unable to find
// target container"), whatever the mode.
func targetNamespaces(cfg *runtimeapi.ContainerConfig, pod *v1.Pod, target string, rt *podruntime.Pod) error {
	instances := rt.Instances(target)
	if len(instances) == 0 {
		return fmt.Errorf("unable to find target container %v", target)
	}
	if cfg.Linux == nil {
		cfg.Linux = &runtimeapi.LinuxContainerConfig{}
	}
	if cfg.Linux.SecurityContext == nil {
		cfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{}
	}
	podNetwork := cfg.Linux.SecurityContext.GetNamespaceOptions().GetNetwork() == runtimeapi.NamespaceMode_POD
	cfg.Linux.SecurityContext.NamespaceOptions = containerconfig.TargetNamespaces(pod, podNetwork, instances[0].ID)
	return nil
}
