package apicoverage_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const kubectlPath = "/usr/bin/kubectl"

// kubectl runs kubectl against the shared server and returns its output;
// it fails the test when kubectl fails.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	return kubectlIn(t.Context(), t, args...)
}

func kubectlIn(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	if _, err := os.Stat(kubectlPath); err != nil {
		t.Skip("kubectl not installed")
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath, append([]string{"--kubeconfig", shared.KubeconfigPath()}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// ingressManifest is what an ingress controller's published install
// manifest holds besides RBAC (which lands with the authz branch): its
// namespace, class, priority class, network policy, quota and limits,
// workload, service and a first Ingress.
const ingressManifest = `apiVersion: v1
kind: Namespace
metadata:
  name: ingress-nginx
  labels:
    app.kubernetes.io/name: ingress-nginx
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: ingress-nginx-critical
value: 1000000
globalDefault: false
description: Ingress controllers keep traffic flowing.
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: nginx
  annotations:
    ingressclass.kubernetes.io/is-default-class: "true"
  labels:
    app.kubernetes.io/component: controller
spec:
  controller: k8s.io/ingress-nginx
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: ingress-nginx
  namespace: ingress-nginx
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: ingress-nginx-controller
  namespace: ingress-nginx
data:
  allow-snippet-annotations: "false"
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: ingress-nginx-admission
  namespace: ingress-nginx
spec:
  podSelector:
    matchLabels:
      app.kubernetes.io/component: admission-webhook
  policyTypes:
  - Ingress
  - Egress
  egress:
  - {}
---
apiVersion: v1
kind: LimitRange
metadata:
  name: ingress-nginx
  namespace: ingress-nginx
spec:
  limits:
  - type: Container
    default:
      memory: 512Mi
    defaultRequest:
      cpu: 100m
      memory: 90Mi
---
apiVersion: v1
kind: ResourceQuota
metadata:
  name: ingress-nginx
  namespace: ingress-nginx
spec:
  hard:
    pods: "20"
    requests.cpu: "4"
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata:
  name: ingress-sandboxed
handler: runsc
---
apiVersion: v1
kind: Service
metadata:
  name: ingress-nginx-controller
  namespace: ingress-nginx
spec:
  type: ClusterIP
  ports:
  - name: http
    port: 80
    targetPort: http
  selector:
    app.kubernetes.io/component: controller
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ingress-nginx-controller
  namespace: ingress-nginx
spec:
  replicas: 1
  selector:
    matchLabels:
      app.kubernetes.io/component: controller
  template:
    metadata:
      labels:
        app.kubernetes.io/component: controller
    spec:
      priorityClassName: ingress-nginx-critical
      serviceAccountName: ingress-nginx
      containers:
      - name: controller
        image: registry.k8s.io/ingress-nginx/controller:v1.12.0
        args: [/nginx-ingress-controller, --ingress-class=nginx]
        ports:
        - name: http
          containerPort: 80
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: demo
  namespace: ingress-nginx
spec:
  ingressClassName: nginx
  tls:
  - hosts: [demo.example.com]
    secretName: demo-tls
  rules:
  - host: demo.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: ingress-nginx-controller
            port:
              number: 80
`

// TestKubectlServerSideApplyOfAnIngressControllerManifest applies, with
// kubectl's server-side apply, a manifest that mixes the new kinds as an
// ingress controller's does; applies it again unchanged; and prints the
// new kinds with upstream's columns.
func TestKubectlServerSideApplyOfAnIngressControllerManifest(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ingress-nginx.yaml")
	if err := os.WriteFile(file, []byte(ingressManifest), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		kubectlIn(context.Background(), t, "delete", "--ignore-not-found", "--wait=false", "-f", file)
	})
	out := kubectl(t, "apply", "--server-side", "-f", file)
	for _, want := range []string{
		"priorityclass.scheduling.k8s.io/ingress-nginx-critical serverside-applied",
		"ingressclass.networking.k8s.io/nginx serverside-applied",
		"networkpolicy.networking.k8s.io/ingress-nginx-admission serverside-applied",
		"limitrange/ingress-nginx serverside-applied",
		"resourcequota/ingress-nginx serverside-applied",
		"runtimeclass.node.k8s.io/ingress-sandboxed serverside-applied",
		"ingress.networking.k8s.io/demo serverside-applied",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("apply --server-side: no %q in\n%s", want, out)
		}
	}
	// Applied again by the same manager, nothing conflicts.
	kubectl(t, "apply", "--server-side", "-f", file)
	// The fields are kubectl's, recorded as upstream records them.
	if out := kubectl(t, "get", "ingressclass", "nginx", "-o", "jsonpath={.metadata.managedFields[0].manager}"); out != "kubectl" {
		t.Errorf("managedFields manager %q, want kubectl", out)
	}

	for _, tc := range []struct {
		args   []string
		header string
		row    string
	}{
		{[]string{"get", "ingressclass", "nginx"}, "NAME              CONTROLLER             PARAMETERS   AGE", "nginx (default)   k8s.io/ingress-nginx   <none>"},
		{[]string{"get", "pc", "ingress-nginx-critical"}, "NAME                     VALUE     GLOBAL-DEFAULT   AGE", "ingress-nginx-critical   1000000   false"},
		{[]string{"get", "-n", "ingress-nginx", "ing", "demo"}, "NAME   CLASS   HOSTS              ADDRESS   PORTS     AGE", "demo   nginx   demo.example.com             80, 443"},
		{[]string{"get", "-n", "ingress-nginx", "netpol"}, "NAME                      POD-SELECTOR                                    AGE", "ingress-nginx-admission   app.kubernetes.io/component=admission-webhook"},
		{[]string{"get", "runtimeclass", "ingress-sandboxed"}, "NAME                HANDLER   AGE", "ingress-sandboxed   runsc"},
		{[]string{"get", "flowschema", "exempt"}, "NAME     PRIORITYLEVEL   MATCHINGPRECEDENCE   DISTINGUISHERMETHOD   AGE", "exempt   exempt          1                    <none>"},
		{[]string{"get", "apiservice", "v1.apps"}, "NAME      SERVICE   AVAILABLE   AGE", "v1.apps   Local     True"},
		{[]string{"get", "-n", "ingress-nginx", "quota"}, "NAME            REQUEST   LIMIT   AGE", "ingress-nginx"},
	} {
		out := kubectl(t, tc.args...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) < 2 || !strings.HasPrefix(lines[0], tc.header) || !strings.HasPrefix(lines[1], tc.row) {
			t.Errorf("kubectl %s:\n%s\nwant header %q and a row starting %q", strings.Join(tc.args, " "), out, tc.header, tc.row)
		}
	}
}

// TestKubectlExplainNewKinds: kubectl explain finds the new kinds' fields
// in the OpenAPI documents, with their descriptions.
func TestKubectlExplainNewKinds(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"ingressclass.spec.controller", "controller refers to the name of the controller"},
		{"ingress.spec.rules.http.paths.pathType", "pathType determines the interpretation of the path matching"},
		{"priorityclass.value", "value represents the integer value of this priority class"},
		{"flowschema.spec.matchingPrecedence", "`matchingPrecedence` is used to choose among the FlowSchemas"},
		{"resourceclaim.spec.devices", "Devices defines how to request devices"},
		{"csidriver.spec.attachRequired", "attachRequired indicates this CSI volume driver requires an attach operation"},
	} {
		if out := kubectl(t, "explain", tc.path); !strings.Contains(out, tc.want) {
			t.Errorf("kubectl explain %s:\n%s\nwant %q", tc.path, out, tc.want)
		}
	}
}

// TestKubectlAPIResourcesAsUpstream: kubectl api-resources -o wide on
// Kite prints what it prints on kube-apiserver 1.37.2 (the recorded
// api-resources-wide.txt: names, short names, group versions, scope,
// kinds, verbs, categories, in upstream's group order), besides the
// resource metrics API, which Kite serves itself.
func TestKubectlAPIResourcesAsUpstream(t *testing.T) {
	normalize := func(text string) []string {
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
			if strings.Contains(l, "metrics.k8s.io/") {
				continue
			}
			lines = append(lines, strings.Join(strings.Fields(l), " "))
		}
		return lines
	}
	want, err := os.ReadFile(filepath.Join("testdata", "discovery-1.37.2", "api-resources-wide.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got := normalize(kubectl(t, "api-resources", "-o", "wide"))
	if w := normalize(string(want)); !slices.Equal(got, w) {
		t.Errorf("kubectl api-resources -o wide:\n%s\nwant (kube-apiserver 1.37.2)\n%s", strings.Join(got, "\n"), strings.Join(w, "\n"))
	}
}
