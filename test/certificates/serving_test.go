package certificates_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
)

// fakeAgent is an agent's HTTPS endpoint serving cert, answering every
// request with "hello", for a Node of its own (address 127.0.0.1, its
// port) and a pod bound to it.
func fakeAgent(t *testing.T, node string, cert tls.Certificate) (pod string) {
	t.Helper()
	return fakeAgentTLS(t, node, &tls.Config{Certificates: []tls.Certificate{cert}})
}

func fakeAgentTLS(t *testing.T, node string, config *tls.Config) (pod string) {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") }))
	srv.TLS = config
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	cs, ctx := admin(t), t.Context()
	n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}) })
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "on-" + node},
		Spec: corev1.PodSpec{NodeName: node, AutomountServiceAccountToken: ptr.To(false), Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Pods("default").Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	return p.Name
}

// TestAPIServerVerifiesAgentServingCertificates: when the API server
// dials an agent (logs, exec), a serving certificate the cluster CA
// issued must be for the address dialed (--kubelet-certificate-authority
// defaults to the cluster CA for those); a self-signed one, as a
// standalone agent's, is let through as kube-apiserver without the flag
// does.
func TestAPIServerVerifiesAgentServingCertificates(t *testing.T) {
	selfSigned := func(t *testing.T) tls.Certificate {
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("agent", []net.IP{net.ParseIP("127.0.0.1")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	fromCA := func(hosts ...string) func(*testing.T) tls.Certificate {
		return func(t *testing.T) tls.Certificate {
			c, err := shared.AgentCertificate("x", hosts...)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
	for i, tc := range []struct {
		name    string
		cert    func(*testing.T) tls.Certificate
		wantErr string
	}{
		{"the cluster CA's certificate for the dialed address is accepted", fromCA("127.0.0.1", "localhost"), ""},
		{"the cluster CA's certificate for another address is refused", fromCA("10.9.9.9", "elsewhere"), "x509: certificate is valid for 10.9.9.9, not 127.0.0.1"},
		{"a self-signed certificate is let through", selfSigned, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := fakeAgent(t, "serving-"+strconv.Itoa(i), tc.cert(t))
			body, err := admin(t).CoreV1().Pods("default").GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(t.Context())
			switch {
			case tc.wantErr == "" && (err != nil || string(body) != "hello"):
				t.Fatalf("logs: %q, %v; want the agent's hello", body, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(string(body), tc.wantErr)): // the Status's message
				t.Fatalf("logs: %q, %v; want an error with %q", body, err, tc.wantErr)
			}
			if tc.wantErr == "" {
				return
			}
			// exec dials through the upgrade path, which must verify too.
			out, err := kubectl(t, "exec", "-n", "default", pod, "--", "true")
			if err == nil || !strings.Contains(out, "x509") {
				t.Errorf("kubectl exec: %v\n%s\nwant a refusal of the certificate", err, out)
			}
		})
	}
}
