package prober

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// BenchmarkCheck is the cost of one successful check of each kind against
// servers and processes on this host: what a probe costs the agent per
// period.
func BenchmarkCheck(b *testing.B) {
	httpSrv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer httpSrv.Close()
	httpPort := int32(httpSrv.Listener.Addr().(*net.TCPAddr).Port)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, health.NewServer())
	done := make(chan struct{})
	go func() { defer close(done); _ = gs.Serve(l) }()
	defer func() { gs.Stop(); <-done }()
	grpcPort := int32(l.Addr().(*net.TCPAddr).Port)

	c := NewChecker(hostExecer{containerID: "c1"})
	target := Target{Container: &v1.Container{Name: "app"}, ContainerID: "c1", PodIP: "127.0.0.1"}
	for _, bc := range []struct {
		name string
		h    v1.ProbeHandler
	}{
		{"httpGet", v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(httpPort), Path: "/"}}},
		{"tcpSocket", v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(httpPort)}}},
		{"grpc", v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: grpcPort}}},
		{"exec", v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			spec := &v1.Probe{ProbeHandler: bc.h, TimeoutSeconds: 1}
			b.ReportAllocs()
			for b.Loop() {
				if o, out, err := c.Check(context.Background(), spec, target); err != nil || o != OutcomeSuccess {
					b.Fatalf("check: %v %v %q", o, err, out)
				}
			}
		})
	}
}
