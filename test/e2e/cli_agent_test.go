package e2e

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestAgentAgainstAPIServer runs "kite apiserver" (no agent: no node
// registers) and "kite agent --kubeconfig" pointing at it: the agent
// registers its node, a pod bound to that node reaches it as an ADD, and
// a static pod from the --config file's staticPodPath gets its mirror pod.
func TestAgentAgainstAPIServer(t *testing.T) {
	needKubectl(t)
	dir := filepath.Join(t.TempDir(), "data")
	api := StartKite(t, "apiserver", "--data-dir", dir, "--secure-port=0", "--unsafe-no-fsync")
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if strings.Contains(api.Stdout(), "agent") {
		t.Errorf("kite apiserver started an agent:\n%s", api.Stdout())
	}
	if out := kubectl(t, kubeconfig, "get", "nodes", "-o", "name"); strings.TrimSpace(out) != "" && !strings.Contains(out, "No resources") {
		t.Errorf("kite apiserver registered a node:\n%s", out)
	}

	// The static pod path comes from a kubelet configuration file.
	manifests := t.TempDir()
	writeFile(t, filepath.Join(manifests, "static.yaml"), podYAML("static", ""))
	config := filepath.Join(t.TempDir(), "kubelet.yaml")
	writeFile(t, config, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nstaticPodPath: "+manifests+"\n"))
	const node = "e2e-agent"
	// Its own --root-dir: the default, ./kite-agent, would be the
	// package's directory.
	agent := StartKite(t, "agent", "--port=0", "--kubeconfig", kubeconfig, "--hostname-override", node, "--config", config,
		"--root-dir", filepath.Join(t.TempDir(), "agent"))
	podFile := filepath.Join(t.TempDir(), "bound.yaml")
	writeFile(t, podFile, podYAML("bound", node))
	kubectl(t, kubeconfig, "apply", "-f", podFile)
	eventually(t, "the agent logged no ADD of the bound pod", func() bool {
		return loggedOperation(agent, "ADD", "api", "bound_default")
	})
	eventually(t, "the agent registered no node "+node, func() bool {
		out, err := tryKubectl(t, kubeconfig, "get", "node", node, "-o", "name")
		return err == nil && strings.Contains(out, "node/"+node)
	})
	// The static pod, and its mirror once the node is registered.
	eventually(t, "the agent logged no ADD of the static pod", func() bool {
		return loggedOperation(agent, "ADD", "file", "static-"+node+"_default")
	})
	eventually(t, "no mirror pod of the static pod", func() bool {
		out, err := tryKubectl(t, kubeconfig, "get", "pod", "static-"+node, "-o", "name")
		return err == nil && strings.Contains(out, "pod/static-"+node)
	})
	stopCleanly(t, agent, syscall.SIGTERM)
	stopCleanly(t, api, syscall.SIGTERM)
}
