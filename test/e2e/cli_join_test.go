package e2e

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAgentJoinsWithABootstrapToken: "kite token create" prints a join
// command; an agent given a wrong CA hash refuses the server; one given
// the right hash and the token gets a client certificate through a
// CertificateSigningRequest (auto-approved, signed), registers its Node
// as system:node:<name> and, as that node, may not read the secret of a
// pod bound elsewhere (the Node authorizer).
func TestAgentJoinsWithABootstrapToken(t *testing.T) {
	needKubectl(t)
	dir := filepath.Join(t.TempDir(), "data")
	api := StartKite(t, "apiserver", "--data-dir", dir, "--secure-port=0", "--unsafe-no-fsync")
	admin := filepath.Join(dir, "kubeconfig")

	created := RunKite(t, 30*time.Second, "token", "create", "--data-dir", dir, "--ttl", "1h", "--print-join-command")
	join := strings.Fields(created.Stdout)
	if created.Code != 0 || len(join) != 8 || join[1] != "agent" || join[2] != "--server" || join[4] != "--token" || join[6] != "--ca-cert-hash" {
		t.Fatalf("kite token create --print-join-command: exit %d\n%s%s", created.Code, created.Stdout, created.Stderr)
	}
	server, token, hash := join[3], join[5], join[7]
	tokenID, _, _ := strings.Cut(token, ".")
	secret := kubectl(t, admin, "get", "secret", "-n", "kube-system", "bootstrap-token-"+tokenID, "-o", "jsonpath={.type} {.data.auth-extra-groups}")
	if !strings.HasPrefix(secret, "bootstrap.kubernetes.io/token ") {
		t.Errorf("the token's secret: %q", secret)
	}

	const node = "joined-node"
	root := filepath.Join(t.TempDir(), "agent")
	wrong := RunKite(t, 30*time.Second, "agent", "--port=0", "--server", server, "--token", token, "--hostname-override", node, "--root-dir", root,
		"--ca-cert-hash", "sha256:"+strings.Repeat("0", 64))
	if wrong.Code == 0 || !strings.Contains(wrong.Stderr+wrong.Stdout, "is none of --ca-cert-hash") {
		t.Fatalf("an agent with a wrong CA hash: exit %d\n%s%s", wrong.Code, wrong.Stdout, wrong.Stderr)
	}

	agent := StartKite(t, "agent", "--port=0", "--server", server, "--token", token, "--ca-cert-hash", hash, "--hostname-override", node, "--root-dir", root)
	eventually(t, "the joined agent registered no node "+node, func() bool {
		out, err := tryKubectl(t, admin, "get", "node", node, "-o", "name")
		return err == nil && strings.Contains(out, "node/"+node)
	})
	own := filepath.Join(root, "kubeconfig")
	if out := kubectl(t, own, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}"); !strings.HasPrefix(out, "system:node:"+node+" ") || !strings.Contains(out, "system:nodes") {
		t.Errorf("the agent's kubeconfig is %q, want system:node:%s in system:nodes", out, node)
	}
	// The agent's service proxy runs as the node: it must list and watch
	// Services and EndpointSlices.
	for _, what := range []string{"services", "endpointslices.discovery.k8s.io"} {
		if out, _ := tryKubectl(t, own, "auth", "can-i", "watch", what); strings.TrimSpace(out) != "yes" {
			t.Errorf("kubectl auth can-i watch %s as the node: %q, want yes", what, out)
		}
	}
	csrs := kubectl(t, admin, "get", "csr", "--no-headers")
	if !strings.Contains(csrs, "system:bootstrap:"+tokenID) || !strings.Contains(csrs, "Approved,Issued") {
		t.Errorf("kubectl get csr:\n%s\nwant the token's request, approved and issued", csrs)
	}

	podFile := filepath.Join(t.TempDir(), "elsewhere.yaml")
	writeFile(t, podFile, []byte(`apiVersion: v1
kind: Secret
metadata: {name: theirs, namespace: default}
stringData: {k: v}
---
apiVersion: v1
kind: Pod
metadata: {name: elsewhere, namespace: default}
spec:
  nodeName: another-node
  automountServiceAccountToken: false
  containers: [{name: c, image: busybox}]
  volumes: [{name: s, secret: {secretName: theirs}}]
`))
	kubectl(t, admin, "apply", "-f", podFile)
	out, err := tryKubectl(t, own, "get", "secret", "theirs", "-n", "default")
	if err == nil || !strings.Contains(out, `User "system:node:`+node+`" cannot get resource "secrets"`) {
		t.Errorf("the node reads the secret of a pod bound elsewhere: %v\n%s", err, out)
	}

	stopCleanly(t, agent, syscall.SIGTERM)
	stopCleanly(t, api, syscall.SIGTERM)
}
