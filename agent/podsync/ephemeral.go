package podsync

import (
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/podruntime"
)

// targetNamespaces makes cfg join the process namespace of the pod's
// container target, as the kubelet does for an ephemeral container with a
// targetContainerName (NamespaceMode TARGET with the target's runtime ID);
// the other namespaces stay the sandbox's. A target the runtime does not
// have is an error (the kubelet's "unable to find target container").
func targetNamespaces(cfg *runtimeapi.ContainerConfig, sb *runtimeapi.PodSandboxConfig, target string, rt *podruntime.Pod) error {
	instances := rt.Instances(target)
	if len(instances) == 0 {
		return fmt.Errorf("unable to find target container %v", target)
	}
	ns := &runtimeapi.NamespaceOption{}
	if o := sb.GetLinux().GetSecurityContext().GetNamespaceOptions(); o != nil {
		ns.Network, ns.Ipc = o.Network, o.Ipc
	}
	ns.Pid, ns.TargetId = runtimeapi.NamespaceMode_TARGET, instances[0].ID
	if cfg.Linux == nil {
		cfg.Linux = &runtimeapi.LinuxContainerConfig{}
	}
	if cfg.Linux.SecurityContext == nil {
		cfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{}
	}
	cfg.Linux.SecurityContext.NamespaceOptions = ns
	return nil
}
