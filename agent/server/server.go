package server

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/proxy"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	utilexec "k8s.io/utils/exec"

	"github.com/kite-project/kite/agent/runtime"
	"github.com/kite-project/kite/apis/core/options"
	"github.com/kite-project/kite/batchconn"
	"github.com/kite-project/kite/pki"
)

// Runtime is what the server needs of the container runtime.
type Runtime interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string) (*runtimeapi.ContainerStatus, error)
}

// Execer runs a command in a running container, streaming its stdio
// (the process runtime's Exec).
type Execer interface {
	Exec(ctx context.Context, containerID string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int32, error)
}

// TTYExecer runs a command on a pseudo-terminal (the process runtime's
// ExecTTY).
type TTYExecer interface {
	ExecTTY(ctx context.Context, containerID string, cmd []string, stdin io.Reader, out io.Writer, resize <-chan runtime.TerminalSize) (int32, error)
}

// Options configure a Server.
type Options struct {
	// Runtime finds the pods and their containers. Required.
	Runtime Runtime
	// Pods lists the pods the agent runs, for /pods; nil serves an empty list.
	Pods func() []*v1.Pod
	// ClientCAs verify client certificates; with AdminToken, the only
	// ways in. Both empty lets nobody in.
	ClientCAs  *x509.CertPool
	AdminToken string
	// Certificate serves TLS. Required for ListenAndServe.
	Certificate tls.Certificate
	// GetCertificate, if set, serves TLS instead, Certificate when it
	// has none (a certificate rotated without a restart).
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// Summary, if set, answers /stats/summary (the kubelet's Summary API:
	// the node's and its pods' CPU and memory, agent/stats).
	Summary func(ctx context.Context) (*statsapi.Summary, error)
	// StreamIdleTimeout and StreamCreationTimeout bound exec, attach and
	// port-forward sessions (the kubelet's 4 h and 30 s when zero).
	StreamIdleTimeout, StreamCreationTimeout time.Duration
}

// Server serves the agent's endpoints.
type Server struct {
	opts Options
	mux  *http.ServeMux
	// attached are the container instances that have had an attach
	// session (replaysFirstAttach).
	attached attachedSet
}

// attachedLimit is how many attached instances the server remembers
// before it forgets those the runtime no longer has.
const attachedLimit = 1024

// liveContainers lists the runtime's container ids, for attachedSet.
func (s *Server) liveContainers(ctx context.Context) func() map[string]bool {
	return func() map[string]bool {
		cs, err := s.opts.Runtime.ListContainers(ctx, nil)
		if err != nil {
			return nil
		}
		ids := make(map[string]bool, len(cs))
		for _, c := range cs {
			ids[c.Id] = true
		}
		return ids
	}
}

// New builds the handler.
func New(opts Options) (*Server, error) {
	if opts.Runtime == nil {
		return nil, errors.New("agent server: no runtime given")
	}
	if opts.StreamIdleTimeout == 0 {
		opts.StreamIdleTimeout = 4 * time.Hour
	}
	if opts.StreamCreationTimeout == 0 {
		opts.StreamCreationTimeout = 30 * time.Second
	}
	s := &Server{opts: opts, mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	s.mux.HandleFunc("GET /pods", s.pods)
	s.mux.HandleFunc("GET /stats/summary", s.summary)
	s.mux.HandleFunc("GET /containerLogs/{ns}/{pod}/{container}", s.containerLogs)
	for _, p := range []string{"/exec/{ns}/{pod}/{container}", "/exec/{ns}/{pod}/{uid}/{container}"} {
		s.mux.HandleFunc(p, s.exec)
	}
	for _, p := range []string{"/attach/{ns}/{pod}/{container}", "/attach/{ns}/{pod}/{uid}/{container}"} {
		s.mux.HandleFunc(p, s.attach)
	}
	for _, p := range []string{"/portForward/{ns}/{pod}", "/portForward/{ns}/{pod}/{uid}"} {
		s.mux.HandleFunc(p, s.portForward)
	}
	return s, nil
}

// ServeHTTP authenticates, then routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.authenticated(r) {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) authenticated(r *http.Request) bool {
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 && s.opts.ClientCAs != nil {
		certs := r.TLS.PeerCertificates
		inter := x509.NewCertPool()
		for _, c := range certs[1:] {
			inter.AddCert(c)
		}
		_, err := certs[0].Verify(x509.VerifyOptions{Roots: s.opts.ClientCAs, Intermediates: inter,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		if err == nil && certs[0].Subject.CommonName == pki.KubeletClientCommonName {
			return true
		}
	}
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && s.opts.AdminToken != "" {
		return subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.AdminToken)) == 1
	}
	return false
}

// getCertificate is GetCertificate's certificate, else (nil, nil):
// Certificate.
func (s *Server) getCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if s.opts.GetCertificate == nil {
		return nil, nil
	}
	if c, err := s.opts.GetCertificate(hello); err == nil && c != nil {
		return c, nil
	}
	return nil, nil
}

// Serve serves TLS on ln until ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler: s,
		TLSConfig: &tls.Config{
			MinVersion:     tls.VersionTLS12,
			Certificates:   []tls.Certificate{s.opts.Certificate},
			GetCertificate: s.getCertificate,
			// Verified by authenticated, which also accepts a token.
			ClientAuth: tls.RequestClientCert,
			NextProtos: []string{"http/1.1"}, // SPDY upgrades need HTTP/1.1
		},
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          nil,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		srv.Close()
	}()
	// A log read writes 16 KiB TLS records one write(2) each; batchconn
	// gathers what the handler writes while the kernel takes the last
	// write, as the API server's connections do.
	err := srv.ServeTLS(batchconn.NewListener(ln, batchconn.Options{}), "", "")
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func (s *Server) pods(w http.ResponseWriter, r *http.Request) {
	list := &v1.PodList{}
	list.Kind, list.APIVersion = "PodList", "v1"
	if s.opts.Pods != nil {
		for _, p := range s.opts.Pods() {
			list.Items = append(list.Items, *p)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(list)
}

// message answers an error as the kubelet does, in plain text (the API
// server turns it into a Status).
func message(w http.ResponseWriter, code int, msg string) {
	http.Error(w, msg, code)
}

// instance is a container instance of a pod.
type instance struct {
	id           string
	restartCount int
	running      bool
	logPath      string
}

// findContainer finds pod ns/name's sandbox uid and its container's
// instances, newest first; errors are the kubelet's 404 texts.
func (s *Server) findContainer(ctx context.Context, ns, pod, container string) (uid string, _ []instance, code int, _ error) {
	sbs, err := s.opts.Runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{
		runtime.LabelPodNamespace: ns, runtime.LabelPodName: pod}})
	if err != nil {
		return "", nil, http.StatusInternalServerError, err
	}
	if len(sbs) == 0 {
		return "", nil, http.StatusNotFound, fmt.Errorf("pod %q does not exist", pod)
	}
	// The newest sandbox is the pod's (an older uid is a deleted pod of the same name).
	newest := sbs[0]
	for _, sb := range sbs {
		if sb.CreatedAt > newest.CreatedAt {
			newest = sb
		}
	}
	uid = newest.Labels[runtime.LabelPodUID]
	cs, err := s.opts.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{
		runtime.LabelPodUID: uid, runtime.LabelContainerName: container}})
	if err != nil {
		return "", nil, http.StatusInternalServerError, err
	}
	var out []instance
	for _, c := range cs {
		st, err := s.opts.Runtime.ContainerStatus(ctx, c.Id)
		if err != nil {
			continue
		}
		n, _ := strconv.Atoi(st.Annotations[runtime.AnnotationRestartCount])
		out = append(out, instance{id: c.Id, restartCount: n, running: st.State == runtimeapi.ContainerState_CONTAINER_RUNNING, logPath: st.LogPath})
	}
	if len(out) == 0 {
		return "", nil, http.StatusNotFound, fmt.Errorf("container %q not found in pod %q", container, pod)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j].restartCount > out[i].restartCount {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return uid, out, 0, nil
}

func (s *Server) containerLogs(w http.ResponseWriter, r *http.Request) {
	ns, pod, container := r.PathValue("ns"), r.PathValue("pod"), r.PathValue("container")
	q := r.URL.Query()
	if q.Get("tailLines") == "" && q.Get("tail") != "" && q.Get("tail") != "all" {
		q.Set("tailLines", q.Get("tail")) // the legacy name
	}
	opts, err := options.Log(q)
	if err != nil {
		message(w, http.StatusBadRequest, `{"message": "Unable to decode query."}`)
		return
	}
	if (opts.SinceSeconds != nil && *opts.SinceSeconds < 1) || (opts.SinceSeconds != nil && opts.SinceTime != nil) ||
		(opts.TailLines != nil && *opts.TailLines < 0) || (opts.LimitBytes != nil && *opts.LimitBytes < 1) {
		message(w, http.StatusUnprocessableEntity, `{"message": "Invalid request."}`)
		return
	}
	_, insts, code, err := s.findContainer(r.Context(), ns, pod, container)
	if err != nil {
		message(w, code, err.Error())
		return
	}
	inst := insts[0]
	if opts.Previous {
		if len(insts) < 2 {
			message(w, http.StatusBadRequest, fmt.Sprintf("previous terminated container %q in pod %q not found", container, pod))
			return
		}
		inst = insts[1]
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	running := func() bool {
		st, err := s.opts.Runtime.ContainerStatus(r.Context(), inst.id)
		return err == nil && st.State == runtimeapi.ContainerState_CONTAINER_RUNNING
	}
	fw := flushWriter{w: w, f: http.NewResponseController(w)}
	if err := ReadLogs(r.Context(), inst.logPath, NewLogOptions(opts, time.Now()), running, fw); err != nil {
		klog.FromContext(r.Context()).Error(err, "Reading container log", "pod", ns+"/"+pod, "container", container)
	}
}

type flushWriter struct {
	w io.Writer
	f *http.ResponseController
}

func (f flushWriter) Write(b []byte) (int, error) { return f.w.Write(b) }
func (f flushWriter) Flush()                      { f.f.Flush() }

func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	ns, pod, container := r.PathValue("ns"), r.PathValue("pod"), r.PathValue("container")
	streamOpts, err := remotecommand.NewOptions(r)
	if err != nil {
		message(w, http.StatusBadRequest, err.Error())
		return
	}
	inst, p, refusal := s.findRunning(r.Context(), opExec, ns, pod, r.PathValue("uid"), container)
	if refusal != nil {
		message(w, refusal.code, refusal.msg)
		return
	}
	uid := sessionUID(p, r.PathValue("uid"))
	if st, ok := s.opts.Runtime.(runtime.Streamer); ok {
		u, err := st.Exec(r.Context(), &runtimeapi.ExecRequest{ContainerId: inst.id, Cmd: r.URL.Query()["command"],
			Tty: streamOpts.TTY, Stdin: streamOpts.Stdin, Stdout: streamOpts.Stdout, Stderr: streamOpts.Stderr})
		proxyStream(w, r, u, err)
		return
	}
	ex, ok := s.opts.Runtime.(Execer)
	if !ok {
		message(w, http.StatusNotImplemented, "the runtime does not support exec")
		return
	}
	remotecommand.ServeExec(w, r, execer{ex: ex, id: inst.id}, pod, uid, container, r.URL.Query()["command"], streamOpts,
		s.opts.StreamIdleTimeout, s.opts.StreamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

func (s *Server) attach(w http.ResponseWriter, r *http.Request) {
	ns, pod, container := r.PathValue("ns"), r.PathValue("pod"), r.PathValue("container")
	streamOpts, err := remotecommand.NewOptions(r)
	if err != nil {
		message(w, http.StatusBadRequest, err.Error())
		return
	}
	inst, p, refusal := s.findRunning(r.Context(), opAttach, ns, pod, r.PathValue("uid"), container)
	if refusal != nil {
		message(w, refusal.code, refusal.msg)
		return
	}
	uid := sessionUID(p, r.PathValue("uid"))
	// As the kubelet's GetAttach: whether the container has a terminal
	// was decided when it started, so the session's tty is the
	// container's, whatever the client asked. A client that asked for
	// no tty and for stderr (kubectl -it without a terminal of its own)
	// is then refused by the runtime's streaming server ("tty and stderr
	// cannot both be true") and kubectl falls back to the log, as
	// against a kubelet.
	var spec *v1.Container
	if p != nil {
		spec = podContainer(p, container)
	}
	if spec != nil {
		streamOpts.TTY = spec.TTY
	}
	if st, ok := s.opts.Runtime.(runtime.Streamer); ok {
		u, err := st.Attach(r.Context(), &runtimeapi.AttachRequest{ContainerId: inst.id,
			Tty: streamOpts.TTY, Stdin: streamOpts.Stdin, Stdout: streamOpts.Stdout, Stderr: streamOpts.Stderr})
		if err == nil && replaysFirstAttach(spec, *streamOpts) && s.attached.first(inst.id, attachedLimit, s.liveContainers(r.Context())) {
			remotecommand.ServeAttach(w, r, replayAttacher{s: s, inst: inst, url: u}, pod, uid, container, streamOpts,
				s.opts.StreamIdleTimeout, s.opts.StreamCreationTimeout, remotecommand.SupportedStreamingProtocols)
			return
		}
		proxyStream(w, r, u, err)
		return
	}
	remotecommand.ServeAttach(w, r, attacher{s: s, inst: inst}, pod, uid, container, streamOpts,
		s.opts.StreamIdleTimeout, s.opts.StreamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

// Attacher reaches a running container's standard streams (the process
// runtime's Attach, for containers started with stdin or a tty). An error
// wrapping errors.ErrUnsupported says the container has none to reach:
// attach then follows its log.
type Attacher interface {
	Attach(ctx context.Context, containerID string, stdin io.Reader, stdout, stderr io.Writer, resize <-chan runtime.TerminalSize) error
}

// attacher streams what a running container writes from now on: through
// the runtime's Attacher where the container has stdin or a tty (and
// stdin then goes in), else from its log, split back into stdout and
// stderr, with stdin ignored (as containerd ignores it for a container
// started without).
type attacher struct {
	s    *Server
	inst instance
}

func (a attacher) AttachContainer(ctx context.Context, _, _, _ string, in io.Reader, out, errw io.WriteCloser, _ bool, resize <-chan remotecommand.TerminalSize) error {
	var stdout, stderr io.Writer
	if out != nil {
		stdout = out
	}
	if errw != nil {
		stderr = errw
	}
	if at, ok := a.s.opts.Runtime.(Attacher); ok {
		done := make(chan struct{})
		defer close(done)
		err := at.Attach(ctx, a.inst.id, in, stdout, stderr, terminalSizes(resize, done))
		if !errors.Is(err, errors.ErrUnsupported) {
			return err
		}
	}
	running := func() bool {
		st, err := a.s.opts.Runtime.ContainerStatus(ctx, a.inst.id)
		return err == nil && st.State == runtimeapi.ContainerState_CONTAINER_RUNNING
	}
	opts := LogOptions{Follow: true, Tail: 0}
	if out != nil {
		opts.Stdout = out
	}
	if errw != nil {
		opts.Stderr = errw
	}
	return ReadLogs(ctx, a.inst.logPath, opts, running, io.Discard)
}

// terminalSizes passes resize on as the runtime's sizes until resize or
// done closes; nil for nil.
func terminalSizes(resize <-chan remotecommand.TerminalSize, done <-chan struct{}) <-chan runtime.TerminalSize {
	if resize == nil {
		return nil
	}
	sizes := make(chan runtime.TerminalSize)
	go func() { // ends with resize or done
		defer close(sizes)
		for {
			select {
			case <-done:
				return
			case sz, ok := <-resize:
				if !ok {
					return
				}
				select {
				case sizes <- runtime.TerminalSize{Width: sz.Width, Height: sz.Height}:
				case <-done:
					return
				}
			}
		}
	}()
	return sizes
}

func (s *Server) portForward(w http.ResponseWriter, r *http.Request) {
	ns, pod := r.PathValue("ns"), r.PathValue("pod")
	pfOpts, err := portforward.NewV4Options(r)
	if err != nil {
		message(w, http.StatusBadRequest, err.Error())
		return
	}
	// As the kubelet's getPortForward and GetPortForward: the agent's
	// pod, then its ready sandbox in the runtime.
	p, known := s.agentPod(ns, pod)
	if !known {
		message(w, http.StatusNotFound, "pod does not exist")
		return
	}
	labels := map[string]string{runtime.LabelPodNamespace: ns, runtime.LabelPodName: pod}
	if p != nil {
		if uid := r.PathValue("uid"); uid != "" && string(p.UID) != uid {
			message(w, http.StatusNotFound, "pod not found")
			return
		}
		labels[runtime.LabelPodUID] = string(p.UID)
	}
	sbs, err := s.opts.Runtime.ListPodSandbox(r.Context(), &runtimeapi.PodSandboxFilter{LabelSelector: labels,
		State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}})
	if err != nil {
		message(w, http.StatusInternalServerError, err.Error())
		return
	}
	if len(sbs) == 0 {
		message(w, http.StatusInternalServerError, fmt.Sprintf("pod not found (%q)", podFullName(ns, pod)))
		return
	}
	if st, ok := s.opts.Runtime.(runtime.Streamer); ok {
		newest := sbs[0]
		for _, sb := range sbs {
			if sb.CreatedAt > newest.CreatedAt {
				newest = sb
			}
		}
		u, err := st.PortForward(r.Context(), &runtimeapi.PortForwardRequest{PodSandboxId: newest.Id, Port: pfOpts.Ports})
		proxyStream(w, r, u, err)
		return
	}
	portforward.ServePortForward(w, r, hostForwarder{}, pod, sbs[0].Labels[runtime.LabelPodUID], pfOpts,
		s.opts.StreamIdleTimeout, s.opts.StreamCreationTimeout, portforward.SupportedProtocols)
}

// proxyStream proxies a session to the URL of the runtime's streaming
// server, as the kubelet's proxyStream: the client's upgrade (SPDY or
// WebSocket) goes through to it unchanged.
func proxyStream(w http.ResponseWriter, r *http.Request, rawURL string, err error) {
	if err != nil {
		message(w, http.StatusInternalServerError, err.Error())
		return
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		message(w, http.StatusInternalServerError, fmt.Sprintf("the runtime's streaming URL %q: %v", rawURL, err))
		return
	}
	proxy.NewUpgradeAwareHandler(u, nil, false, true, streamResponder{}).ServeHTTP(w, r)
}

type streamResponder struct{}

func (streamResponder) Error(w http.ResponseWriter, r *http.Request, err error) {
	klog.FromContext(r.Context()).Error(err, "Proxying a stream to the runtime")
	message(w, http.StatusInternalServerError, err.Error())
}

// execer adapts the runtime's Exec to cri-streaming's Executor.
type execer struct {
	ex Execer
	id string
}

func (e execer) ExecInContainer(ctx context.Context, _, _, _ string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	if tty {
		t, ok := e.ex.(TTYExecer)
		if !ok {
			return errors.New("exec with a tty is not supported by the runtime")
		}
		return e.execTTY(ctx, t, cmd, in, out, resize)
	}
	var stdout, stderr io.Writer = io.Discard, io.Discard
	if out != nil {
		stdout = out
	}
	if errw != nil {
		stderr = errw
	}
	code, err := e.ex.Exec(ctx, e.id, cmd, in, stdout, stderr)
	if err != nil {
		if ctx.Err() != nil {
			return nil // the client went away: nobody to tell
		}
		return err
	}
	if code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", code), Code: int(code)}
	}
	return nil
}

// execTTY runs cmd on a terminal; its output is all on stdout, as with
// a terminal there is no stderr stream.
func (e execer) execTTY(ctx context.Context, t TTYExecer, cmd []string, in io.Reader, out io.WriteCloser, resize <-chan remotecommand.TerminalSize) error {
	done := make(chan struct{})
	defer close(done)
	sizes := terminalSizes(resize, done)
	var w io.Writer = io.Discard
	if out != nil {
		w = out
	}
	code, err := t.ExecTTY(ctx, e.id, cmd, in, w, sizes)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", code), Code: int(code)}
	}
	return nil
}

// hostForwarder connects to the port on the host: pods use the host's
// network.
type hostForwarder struct{}

func (hostForwarder) PortForward(ctx context.Context, _, _ string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
	if err != nil {
		return fmt.Errorf("port forward to port %d: %w", port, err)
	}
	defer conn.Close()
	done := make(chan struct{}, 2)
	go func() { io.Copy(conn, stream); conn.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	go func() { io.Copy(stream, conn); done <- struct{}{} }()
	<-done
	<-done
	return nil
}

// summary serves the Summary API; 404 when the runtime measures nothing.
func (s *Server) summary(w http.ResponseWriter, r *http.Request) {
	if s.opts.Summary == nil {
		http.NotFound(w, r)
		return
	}
	sum, err := s.opts.Summary(r.Context())
	if err != nil {
		http.Error(w, fmt.Sprintf("failed to get summary stats: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(sum)
}
