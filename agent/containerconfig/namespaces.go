package containerconfig

import (
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Namespaces are the pod's namespace modes, for its sandbox and each of
// its containers alike, as the kubelet's NamespacesForPod
// (kuberuntime/util): PID is each container's own (CONTAINER) unless the
// pod shares one (shareProcessNamespace: POD) or uses the node's (hostPID:
// NODE); IPC is the pod's, or the node's with hostIPC; the network is the
// pod's, or the node's with hostNetwork. Without a pod network
// (podNetwork false) every pod is on the node's network, as the runtime
// gives it no other.
func Namespaces(pod *v1.Pod, podNetwork bool) *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_POD,
		Ipc:     runtimeapi.NamespaceMode_POD,
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
	}
	if pod.Spec.HostNetwork || !podNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	switch {
	case pod.Spec.HostPID:
		ns.Pid = runtimeapi.NamespaceMode_NODE
	case pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace:
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	return ns
}

// TargetNamespaces are the namespace modes of an ephemeral container
// whose targetContainerName runs as targetID, as the kubelet's
// generateLinuxContainerConfig: the target's PID namespace (TARGET) where
// the pod gives each container its own, else the pod's modes unchanged
// (a shared or the node's PID namespace already holds the target).
func TargetNamespaces(pod *v1.Pod, podNetwork bool, targetID string) *runtimeapi.NamespaceOption {
	ns := Namespaces(pod, podNetwork)
	if ns.Pid == runtimeapi.NamespaceMode_CONTAINER {
		ns.Pid, ns.TargetId = runtimeapi.NamespaceMode_TARGET, targetID
	}
	return ns
}
