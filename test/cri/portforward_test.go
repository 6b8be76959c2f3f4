package cri

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// TestPortForwardThroughTheRuntime: port-forward reaches a port the
// pod's busybox httpd listens on, through the API server, the agent's
// proxy and containerd's streaming server.
func TestPortForwardThroughTheRuntime(t *testing.T) {
	a := startAgent(t, "cri-pf", t.TempDir())
	port := freePort(t)
	p := a.pod(t, "web", func(p *v1.Pod) {
		p.Spec.Containers[0].Args = []string{"sh", "-c", fmt.Sprintf("mkdir -p /tmp/www && echo served-by-busybox > /tmp/www/index.html && exec httpd -f -p 127.0.0.1:%d -h /tmp/www", port)}
		// Ready only once httpd answers: on a loaded machine the shell
		// and httpd take their time, and the forward is tried after.
		p.Spec.Containers[0].ReadinessProbe = &v1.Probe{
			ProbeHandler:  v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"wget", "-q", "-O", "/dev/null", fmt.Sprintf("http://127.0.0.1:%d/", port)}}},
			PeriodSeconds: 1, TimeoutSeconds: 5,
		}
	})
	p = a.wait(t, p, "Ready", func(p *v1.Pod) bool {
		return running(p) && p.Status.ContainerStatuses[0].Ready
	})
	rt, upgrader, err := spdy.RoundTripperFor(shared.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	u := a.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(p.Namespace).Name(p.Name).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, "POST", u)
	local := freePort(t)
	stop, ready := make(chan struct{}), make(chan struct{})
	defer close(stop)
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("%d:%d", local, port)}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-errc:
		t.Fatalf("port-forward: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("port-forward not ready in 30 s")
	}
	var body string
	// busybox's httpd may take a while to listen on a loaded machine.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", local))
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if body = string(b); strings.Contains(body, "served-by-busybox") {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	got, _ := a.cs.CoreV1().Pods(p.Namespace).Get(t.Context(), p.Name, metav1.GetOptions{})
	t.Fatalf("through the port-forward: %q, want served-by-busybox; the pod's container statuses: %+v", body, got.Status.ContainerStatuses)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
