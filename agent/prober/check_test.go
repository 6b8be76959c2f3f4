package prober

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type checkCase struct {
	name      string
	probe     v1.ProbeHandler
	timeout   int32
	container v1.Container
	want      Outcome
	output    string // exact unless prefix is set
	prefix    bool
	err       string // substring of the error; "" for none
}

func runChecks(t *testing.T, c *Checker, podIP string, cases []checkCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := &v1.Probe{ProbeHandler: tc.probe, TimeoutSeconds: tc.timeout}
			ctr := tc.container
			if ctr.Name == "" {
				ctr.Name = "app"
			}
			o, out, err := c.Check(context.Background(), spec, Target{Container: &ctr, ContainerID: "c1", PodIP: podIP})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if o != tc.want {
				t.Errorf("outcome = %v, want %v (output %q)", o, tc.want, short(out))
			}
			if tc.prefix && !strings.HasPrefix(out, tc.output) || !tc.prefix && out != tc.output {
				t.Errorf("output = %q, want %q (prefix %v)", short(out), short(tc.output), tc.prefix)
			}
		})
	}
}

// short keeps failure messages readable when outputs are 10 KiB.
func short(s string) string {
	if len(s) > 200 {
		return fmt.Sprintf("%s...(%d bytes)", s[:200], len(s))
	}
	return s
}

func execProbe(cmd ...string) v1.ProbeHandler {
	return v1.ProbeHandler{Exec: &v1.ExecAction{Command: cmd}}
}

func TestCheckExec(t *testing.T) {
	c := NewChecker(hostExecer{containerID: "c1"})
	runChecks(t, c, "", []checkCase{
		{name: "exit 0 succeeds with its output", probe: execProbe("sh", "-c", "echo ok"), want: OutcomeSuccess, output: "ok\n"},
		{name: "non-zero exit fails with stdout then stderr", probe: execProbe("sh", "-c", "echo out; echo err >&2; exit 3"), want: OutcomeFailure, output: "out\nerr\n"},
		{name: "silent failure has empty output", probe: execProbe("false"), want: OutcomeFailure, output: ""},
		{name: "past the timeout fails as upstream says", probe: execProbe("sleep", "5"), timeout: 1, want: OutcomeFailure, output: `command "sleep 5" timed out`},
		{name: "output is cut at 10 KiB", probe: execProbe("sh", "-c", "head -c 20000 /dev/zero | tr '\\0' a; exit 1"), want: OutcomeFailure, output: strings.Repeat("a", 10<<10)},
		{name: "a command that cannot start is an error", probe: execProbe("/nonexistent/probe"), err: "/nonexistent/probe"},
	})
}

func TestCheckExecWithoutRuntimeErrors(t *testing.T) {
	_, _, err := NewChecker(nil).Check(context.Background(), &v1.Probe{ProbeHandler: execProbe("true")}, Target{Container: &v1.Container{Name: "app"}})
	if err == nil {
		t.Fatal("an exec probe without a runtime did not error")
	}
}

func httpProbe(port intstr.IntOrString, path string, headers ...v1.HTTPHeader) v1.ProbeHandler {
	return v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: port, Path: path, HTTPHeaders: headers}}
}

func TestCheckHTTP(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "fine") })
	mux.HandleFunc("/fail", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, "secret internals")
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, strings.Repeat("b", 20000)) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(3 * time.Second):
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/headers", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "ua=%s accept=%q x=%s host=%s", r.UserAgent(), r.Header.Values("Accept"), r.Header.Get("X-Custom"), r.Host)
	})
	mux.HandleFunc("/here", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	// "localhost" is another host name than 127.0.0.1: not followed.
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://localhost:"+strconv.Itoa(port)+"/ok", http.StatusFound)
	})
	tlsSrv := httptest.NewTLSServer(mux)
	t.Cleanup(tlsSrv.Close)
	tlsPort := tlsSrv.Listener.Addr().(*net.TCPAddr).Port
	closed := closedPort(t)

	p := intstr.FromInt32(int32(port))
	named := v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "web", ContainerPort: int32(port)}}}
	tlsProbe := httpProbe(intstr.FromInt32(int32(tlsPort)), "/ok")
	tlsProbe.HTTPGet.Scheme = v1.URISchemeHTTPS
	hostProbe := httpProbe(p, "/headers")
	hostProbe.HTTPGet.Host = "127.0.0.1"

	runChecks(t, NewChecker(nil), "127.0.0.1", []checkCase{
		{name: "200 succeeds with the body", probe: httpProbe(p, "/ok"), want: OutcomeSuccess, output: "fine"},
		{name: "500 fails with the status code, not the body", probe: httpProbe(p, "/fail"), want: OutcomeFailure, output: "HTTP probe failed with statuscode: 500"},
		{name: "404 fails", probe: httpProbe(p, "/missing"), want: OutcomeFailure, output: "HTTP probe failed with statuscode: 404"},
		{name: "the body is read up to 10 KiB", probe: httpProbe(p, "/big"), want: OutcomeSuccess, output: strings.Repeat("b", 10<<10)},
		{name: "User-Agent and Accept by default", probe: httpProbe(p, "/headers"), want: OutcomeSuccess,
			output: fmt.Sprintf(`ua=kube-probe/1.37 accept=["*/*"] x= host=127.0.0.1:%d`, port)},
		{name: "spec headers are sent and override the defaults; Host sets the host", want: OutcomeSuccess,
			probe:  httpProbe(p, "/headers", v1.HTTPHeader{Name: "x-custom", Value: "yes"}, v1.HTTPHeader{Name: "User-Agent", Value: "mine"}, v1.HTTPHeader{Name: "Accept", Value: ""}, v1.HTTPHeader{Name: "Host", Value: "example.test"}),
			output: `ua=mine accept=[] x=yes host=example.test`},
		{name: "an explicit host is used", probe: hostProbe, want: OutcomeSuccess, prefix: true, output: "ua=kube-probe/1.37"},
		{name: "a named container port", probe: httpProbe(intstr.FromString("web"), "/ok"), container: named, want: OutcomeSuccess, output: "fine"},
		{name: "a port number written as a string", probe: httpProbe(intstr.FromString(strconv.Itoa(port)), "/ok"), want: OutcomeSuccess, output: "fine"},
		{name: "an unknown port name is an error", probe: httpProbe(intstr.FromString("web"), "/ok"), err: `strconv.Atoi: parsing "web": invalid syntax`},
		{name: "an out of range port is an error", probe: httpProbe(intstr.FromInt32(70000), "/ok"), err: "invalid port number: 70000"},
		{name: "a same-host redirect is followed", probe: httpProbe(p, "/here"), want: OutcomeSuccess, output: "fine"},
		{name: "a redirect to another host is a warning", probe: httpProbe(p, "/elsewhere"), want: OutcomeWarning, prefix: true, output: `Probe terminated redirects, Response body: <a href="http://localhost:`},
		// Go's error names the last Location as the server wrote it.
		{name: "a redirect loop fails after 10", probe: httpProbe(p, "/loop"), want: OutcomeFailure, output: `Get "/loop": stopped after 10 redirects`},
		{name: "https without verifying the certificate", probe: tlsProbe, want: OutcomeSuccess, output: "fine"},
		{name: "no answer within the timeout fails", probe: httpProbe(p, "/slow"), timeout: 1, want: OutcomeFailure, prefix: true,
			output: fmt.Sprintf(`Get "http://127.0.0.1:%d/slow": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`, port)},
		{name: "a refused connection fails", probe: httpProbe(intstr.FromInt32(int32(closed)), "/"), want: OutcomeFailure,
			output: fmt.Sprintf(`Get "http://127.0.0.1:%d/": dial tcp 127.0.0.1:%d: connect: connection refused`, closed, closed)},
	})
}

// closedPort returns a port on 127.0.0.1 that nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

func TestCheckTCP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	port := l.Addr().(*net.TCPAddr).Port
	closed := closedPort(t)
	tcp := func(p intstr.IntOrString, host string) v1.ProbeHandler {
		return v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: p, Host: host}}
	}
	runChecks(t, NewChecker(nil), "127.0.0.1", []checkCase{
		{name: "a listening port succeeds", probe: tcp(intstr.FromInt32(int32(port)), ""), want: OutcomeSuccess},
		{name: "an explicit host", probe: tcp(intstr.FromInt32(int32(port)), "127.0.0.1"), want: OutcomeSuccess},
		{name: "a named port", probe: tcp(intstr.FromString("db"), ""), container: v1.Container{Ports: []v1.ContainerPort{{Name: "db", ContainerPort: int32(port)}}}, want: OutcomeSuccess},
		{name: "a closed port fails", probe: tcp(intstr.FromInt32(int32(closed)), ""), want: OutcomeFailure,
			output: fmt.Sprintf("dial tcp 127.0.0.1:%d: connect: connection refused", closed)},
	})
}

func TestCheckGRPC(t *testing.T) {
	hs := health.NewServer()
	hs.SetServingStatus("up", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("down", healthpb.HealthCheckResponse_NOT_SERVING)
	port := serveGRPC(t, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, hs) })
	bare := serveGRPC(t, func(*grpc.Server) {})
	closed := closedPort(t)
	g := func(port int, service string) v1.ProbeHandler {
		a := &v1.GRPCAction{Port: int32(port)}
		if service != "" {
			a.Service = &service
		}
		return v1.ProbeHandler{GRPC: a}
	}
	runChecks(t, NewChecker(nil), "127.0.0.1", []checkCase{
		{name: "the server as a whole serving", probe: g(port, ""), want: OutcomeSuccess, output: "service healthy"},
		{name: "a serving service", probe: g(port, "up"), want: OutcomeSuccess, output: "service healthy"},
		{name: "a service not serving fails", probe: g(port, "down"), want: OutcomeFailure, output: `service unhealthy (responded with "NOT_SERVING")`},
		{name: "an unknown service fails", probe: g(port, "nope"), want: OutcomeFailure, output: "error: health rpc probe failed: rpc error: code = NotFound desc = unknown service"},
		{name: "no health service fails", probe: g(bare, ""), want: OutcomeFailure, prefix: true, output: "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): "},
		{name: "nothing listening fails after the timeout", probe: g(closed, ""), timeout: 1, want: OutcomeFailure,
			output: fmt.Sprintf(`timeout: failed to connect service "127.0.0.1:%d" within 1s: context deadline exceeded`, closed)},
	})
}

// serveGRPC starts a gRPC server on 127.0.0.1 until the test ends.
func serveGRPC(t *testing.T, register func(*grpc.Server)) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	register(s)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(l)
	}()
	t.Cleanup(func() {
		s.Stop()
		<-done
	})
	return l.Addr().(*net.TCPAddr).Port
}
