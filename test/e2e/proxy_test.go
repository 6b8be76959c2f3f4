package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// echoServer is a pod's HTTP server: every method answers "METHOD
// path?query"; /html answers a page with a root-relative link (which the
// proxy rewrites); a request with "Upgrade: echo" is switched to a raw
// connection that echoes one line.
const echoServer = `
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def answer(self):
        if self.headers.get("Upgrade") == "echo":
            self.send_response(101)
            self.send_header("Connection", "Upgrade")
            self.send_header("Upgrade", "echo")
            self.end_headers()
            self.wfile.write(b"echo: " + self.rfile.readline())
            self.wfile.flush()
            self.close_connection = True
            return
        if self.path == "/html":
            body, ctype = b'<a href="/rewriteme">test</a>', "text/html"
        else:
            body, ctype = (self.command + " " + self.path).encode(), "text/plain"
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = answer
http.server.ThreadingHTTPServer(("0.0.0.0", int(sys.argv[1])), H).serve_forever()
`

// TestProxySubresources runs `kite server` (process runtime) with a pod
// serving HTTP and a Service in front of it, and goes through pods/proxy,
// services/proxy and nodes/proxy as client-go, kubectl and a raw client
// do against kube-apiserver: every method with its path and query, the
// name:port and scheme forms, the redirect of an empty path, link
// rewriting, an upgraded connection, upstream's errors, and the
// authorization of the proxy subresource by verb.
func TestProxySubresources(t *testing.T) {
	needKubectl(t)
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	const node = "proxy-node"
	awaitSupervisors(t, dir)
	// No --node-ip: pods of the process runtime have the node's address,
	// and upstream proxies only to global unicast ones.
	k := StartKite(t, "server", "--data-dir", dir, "--secure-port=0", "--port=0", "--unsafe-no-fsync", "--hostname-override", node)
	defer stopWithStreamingNoise(t, k)
	kc := filepath.Join(dir, "kubeconfig")
	cs := clientsetFor(t, kc)
	ctx := t.Context()
	nodeIP := ""
	eventually(t, "node "+node+" has no address", func() bool {
		n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err == nil && len(n.Status.Addresses) > 0 {
			nodeIP = n.Status.Addresses[0].Address
		}
		return nodeIP != ""
	})
	if ip := net.ParseIP(nodeIP); ip == nil || !ip.IsGlobalUnicast() {
		t.Skipf("the node's address %s is not global unicast: upstream refuses to proxy to it", nodeIP)
	}
	port := freePort(t)
	script := filepath.Join(t.TempDir(), "echo.py")
	writeFile(t, script, []byte(echoServer))
	t.Cleanup(func() { exec.Command("pkill", "-f", script).Run() })
	manifest := filepath.Join(t.TempDir(), "web.yaml")
	writeFile(t, manifest, []byte(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: python
    command: [python3, %s, "%d"]
    ports: [{containerPort: %d, name: http}]
    readinessProbe: {tcpSocket: {port: %d}, periodSeconds: 1}
---
apiVersion: v1
kind: Pod
metadata: {name: noports}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: busybox, command: [sleep, "3600"]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: nobody}
spec:
  selector: {app: nobody}
  ports: [{name: http, port: 80}]
`, script, port, port, port)))
	kubectl(t, kc, "apply", "-f", manifest)
	// Before the server stops (deferred above): supervisors outlive it.
	defer tryKubectl(t, kc, "delete", "pod", "web", "noports", "--wait=true", "--timeout=20s")
	waitPhase(t, kc, "noports", "Running")
	kubectl(t, kc, "wait", "--for=condition=Ready", "pod/web", "--timeout=60s")

	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer utilnet.CloseIdleConnectionsFor(hc.Transport)
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	do := func(method, path string) (int, http.Header, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, cfg.Host+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(body)
	}
	pods := "/api/v1/namespaces/default/pods/"
	svcs := "/api/v1/namespaces/default/services/"
	ps := strconv.Itoa(port)

	t.Run("pods/proxy passes every method, the path and the query", func(t *testing.T) {
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
			for _, id := range []string{"web", "web:" + ps, "http:web:" + ps} {
				code, _, body := do(m, pods+id+"/proxy/some/path/"+m+"?x=1&y=2")
				if want := m + " /some/path/" + m + "?x=1&y=2"; code != http.StatusOK || body != want {
					t.Errorf("%s pods/%s/proxy/some/path: %d %q, want 200 %q", m, id, code, body, want)
				}
			}
		}
		if code, _, body := do("HEAD", pods+"web/proxy/x"); code != http.StatusOK || body != "" {
			t.Errorf("HEAD pods/web/proxy/x: %d %q, want 200 and no body", code, body)
		}
	})

	t.Run("client-go ProxyGet and kubectl get --raw", func(t *testing.T) {
		body, err := cs.CoreV1().Pods("default").ProxyGet("", "web", ps, "/from/client-go", map[string]string{"q": "v"}).DoRaw(ctx)
		if string(body) != "GET /from/client-go?q=v" || err != nil {
			t.Errorf("ProxyGet of pod web = %q, %v", body, err)
		}
		for _, port := range []string{"", "80"} {
			body, err := cs.CoreV1().Services("default").ProxyGet("", "web", port, "/through/service", nil).DoRaw(ctx)
			if string(body) != "GET /through/service" || err != nil {
				t.Errorf("ProxyGet of service web port %s = %q, %v", port, body, err)
			}
		}
		if out := kubectl(t, kc, "get", "--raw", pods+"web/proxy/raw/"); out != "GET /raw/" {
			t.Errorf("kubectl get --raw pods/web/proxy/raw/ = %q", out)
		}
	})

	t.Run("services/proxy passes every method", func(t *testing.T) {
		// (GET and HEAD of the empty path are redirected: below.)
		for _, m := range []string{"POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
			code, _, body := do(m, svcs+"web/proxy?method="+m)
			if want := m + " /?method=" + m; code != http.StatusOK || body != want {
				t.Errorf("%s services/web/proxy: %d %q, want 200 %q", m, code, body, want)
			}
		}
	})

	t.Run("an empty path is redirected for GET and HEAD", func(t *testing.T) {
		for _, m := range []string{"GET", "HEAD"} {
			for _, base := range []string{pods + "web/proxy", svcs + "web/proxy"} {
				code, h, _ := do(m, base+"?method="+m)
				if code != http.StatusMovedPermanently || h.Get("Location") != base+"/?method="+m {
					t.Errorf("%s %s: %d Location %q, want 301 to %s/?method=%s", m, base, code, h.Get("Location"), base, m)
				}
			}
		}
	})

	t.Run("links in HTML are rewritten to the proxy path", func(t *testing.T) {
		code, _, body := do("GET", pods+"web/proxy/html")
		if want := `<a href="` + pods + `web/proxy/rewriteme">test</a>`; code != http.StatusOK || body != want {
			t.Errorf("GET pods/web/proxy/html: %d %q, want %q", code, body, want)
		}
	})

	t.Run("an upgrade request is passed through", func(t *testing.T) {
		// client-go's transport speaks HTTP/2, which has no upgrades: a
		// TLS connection of our own, with the kubeconfig's credentials.
		tlsCfg, err := rest.TLSConfigFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		tlsCfg.NextProtos = []string{"http/1.1"}
		addr := strings.TrimPrefix(cfg.Host, "https://")
		if tlsCfg.ServerName == "" {
			tlsCfg.ServerName, _, _ = net.SplitHostPort(addr)
		}
		conn, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, "tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		tc := tls.Client(conn, tlsCfg)
		conn.SetDeadline(time.Now().Add(30 * time.Second))
		auth := ""
		if cfg.BearerToken != "" {
			auth = "Authorization: Bearer " + cfg.BearerToken + "\r\n"
		}
		fmt.Fprintf(tc, "GET %sweb/proxy/up HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n%s\r\n", pods, auth)
		r := bufio.NewReader(tc)
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusSwitchingProtocols {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("upgrade through pods/web/proxy: %d %s", resp.StatusCode, b)
		}
		io.WriteString(tc, "hello\n")
		line, err := r.ReadString('\n')
		if line != "echo: hello\n" {
			t.Errorf("after the upgrade: %q, %v; want the pod's echo", line, err)
		}
	})

	t.Run("nodes/proxy reaches the agent's server", func(t *testing.T) {
		for _, id := range []string{node, "https:" + node + ":" + agentPort(t, cs, node)} {
			code, _, body := do("GET", "/api/v1/nodes/"+id+"/proxy/healthz")
			if code != http.StatusOK || body != "ok" {
				t.Errorf("GET nodes/%s/proxy/healthz: %d %q, want the agent's ok", id, code, body)
			}
		}
		body, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/" + node + "/proxy/pods").DoRaw(ctx)
		var list v1.PodList
		if err != nil || json.Unmarshal(body, &list) != nil || len(list.Items) == 0 {
			t.Errorf("GET nodes/%s/proxy/pods = %.200s, %v; want the agent's pod list", node, body, err)
		}
	})

	t.Run("errors are upstream's", func(t *testing.T) {
		closed := strconv.Itoa(freePort(t))
		for _, c := range []struct {
			path string
			code int
			msg  string
		}{
			{pods + "missing/proxy/", 404, `pods "missing" not found`},
			{pods + "a:b:c:d/proxy/", 400, `invalid pod request "a:b:c:d"`},
			{pods + "ftp:web:1/proxy/", 400, `invalid pod request "ftp:web:1"`},
			{pods + "web:" + closed + "/proxy/", 503, "error trying to reach service: dial tcp " + nodeIP + ":" + closed + ": connect: connection refused"},
			{svcs + "nobody/proxy/", 503, `no endpoints available for service "nobody"`},
			{svcs + "web:81/proxy/", 503, `no service port 81 found for service "web"`},
			{svcs + "web:https/proxy/", 503, `no endpoints available for service "web"`},
			{svcs + "missing:80/proxy/", 404, `services "missing" not found`},
			{"/api/v1/nodes/missing/proxy/", 404, `nodes "missing" not found`},
			{pods + "web/proxy/?dryRun=All", 400, "dryRun is not supported"},
		} {
			code, _, body := do("GET", c.path)
			var st metav1.Status
			if err := json.Unmarshal([]byte(body), &st); err != nil || code != c.code || st.Message != c.msg {
				t.Errorf("GET %s: %d %q, want %d with message %q", c.path, code, body, c.code, c.msg)
			}
		}
		// A pod without ports: its IP alone (port 80, where nothing
		// listens here).
		if code, _, body := do("GET", pods+"noports/proxy/"); code != http.StatusServiceUnavailable || !strings.Contains(body, "dial tcp "+nodeIP+":80:") {
			t.Errorf("GET pods/noports/proxy/: %d %q, want 503 from dialing %s:80", code, body, nodeIP)
		}
		if code, _, body := do("TRACE", pods+"web/proxy/"); code != http.StatusMethodNotAllowed {
			t.Errorf("TRACE pods/web/proxy/: %d %q, want 405", code, body)
		}
	})

	t.Run("authorization is by verb on the proxy subresource", func(t *testing.T) {
		_, err := cs.RbacV1().Roles("default").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "proxy-get"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/proxy"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = cs.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "proxy-get"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "proxy-get"},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "proxy-user"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ucfg := rest.CopyConfig(cfg)
		ucfg.Impersonate.UserName = "proxy-user"
		ucs, err := kubernetes.NewForConfig(ucfg)
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, "proxy-user may not GET pods/web/proxy", func() bool {
			body, err := ucs.CoreV1().Pods("default").ProxyGet("", "web", "", "/as/user", nil).DoRaw(ctx)
			return err == nil && string(body) == "GET /as/user"
		})
		err = ucs.CoreV1().RESTClient().Post().AbsPath(pods + "web/proxy/as/user").Do(ctx).Error()
		if want := `pods "web" is forbidden: User "proxy-user" cannot create resource "pods/proxy" in API group "" in the namespace "default"`; err == nil || err.Error() != want {
			t.Errorf("POST pods/web/proxy as proxy-user: %v, want %q", err, want)
		}
		_, err = ucs.CoreV1().Services("default").ProxyGet("", "web", "", "/", nil).DoRaw(ctx)
		if !apierrors.IsForbidden(err) {
			t.Errorf("GET services/web/proxy as proxy-user: %v, want forbidden", err)
		}
	})
}

// agentPort is the node's daemon endpoint port.
func agentPort(t *testing.T, cs *kubernetes.Clientset, node string) string {
	t.Helper()
	n, err := cs.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(int(n.Status.DaemonEndpoints.KubeletEndpoint.Port))
}
