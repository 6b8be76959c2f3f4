// Package containerd runs containerd as a child process of the agent, the
// way k3s does: with a configuration Kite writes under its root directory
// (its own socket, root and state directories, the CRI plugin with runc,
// the cgroup driver the host needs, the streaming server on 127.0.0.1),
// so that it never meets a containerd of the host's. Containers outlive
// it: their shims are processes of their own, and the next containerd on
// the same directories finds them again. See docs/runtime.md.
package containerd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"
)

// PauseImage is the sandbox image, the one the kubelet and the e2e
// framework of our Kubernetes version use (test/utils/image/manifest.go,
// Pause). There is no registry to pull it from here: scripts/images
// builds it and `kite images import` brings it in.
const PauseImage = "registry.k8s.io/pause:3.10.2"

// Options configure a containerd child.
type Options struct {
	// Dir holds the configuration, socket, root, state and log. Required.
	Dir string
	// Binary is the containerd binary; "containerd" from PATH when empty.
	Binary string
	// SystemdCgroup makes runc use systemd's cgroup driver; by default it
	// is used when systemd is the init (/run/systemd/system exists).
	SystemdCgroup *bool
	// SandboxImage is the pause image; PauseImage when empty.
	SandboxImage string
	// StartTimeout bounds the wait for the socket (30 s when zero).
	StartTimeout time.Duration
	// CNIConfDir and CNIBinDir are the CRI plugin's CNI configuration
	// directory (which it watches: a configuration written there later is
	// loaded then) and plugin directory (agent/cni). Empty: directories
	// of its own under Dir that stay empty, so that it has no pod network
	// (every sandbox must then be in the node's network).
	CNIConfDir, CNIBinDir string
}

// Process is a running containerd child.
type Process struct {
	cmd      *exec.Cmd
	done     chan struct{}
	err      error
	endpoint string
	systemd  bool
}

// Endpoint is its CRI socket, unix:///....
func (p *Process) Endpoint() string { return p.endpoint }

// SystemdCgroup says which cgroup driver its runc uses.
func (p *Process) SystemdCgroup() bool { return p.systemd }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Socket is the CRI socket of a containerd Kite runs in dir.
func Socket(dir string) string { return filepath.Join(dir, "containerd.sock") }

// Available says whether containerd and runc can be found (in PATH, or
// binary for containerd), and if not, why.
func Available(binary string) error {
	if binary == "" {
		binary = "containerd"
	}
	for _, b := range []string{binary, "runc", "containerd-shim-runc-v2"} {
		if _, err := exec.LookPath(b); err != nil {
			return fmt.Errorf("containerd: %s not found: %w", b, err)
		}
	}
	return nil
}

// Config is containerd 1.6's configuration (version 2) for a child in
// dir: its socket, root and state under dir, the CRI plugin with runc as
// the default runtime, named "runc" (so that a RuntimeClass of handler
// runc runs, and any other handler is refused, as on a kubelet's node
// with containerd's stock configuration), the streaming server on
// 127.0.0.1:streamPort,
// overlayfs unless the file system below dir cannot have it.
//
// Without CAP_SYS_RESOURCE (a host that is itself a container) no process
// may lower its OOM score adjustment, which runc does for every
// Guaranteed container and every sandbox (-998): restrictOOM then keeps
// containerd from asking for less than its own, as its
// restrict_oom_score_adj option is for, and containerd keeps its own.
//
// The CRI plugin runs CNI itself for every sandbox with a network
// namespace of its own (cniConfDir, cniBinDir: Options); those namespaces
// are mounted under the state directory, not the host's /var/run/netns.
func Config(dir, sandboxImage, snapshotter string, systemdCgroup, restrictOOM bool, streamPort int, cniConfDir, cniBinDir string) string {
	q := strconv.Quote
	if cniConfDir == "" {
		cniConfDir = filepath.Join(dir, "cni", "net.d")
	}
	if cniBinDir == "" {
		cniBinDir = filepath.Join(dir, "cni", "bin")
	}
	oomScore := -999
	if restrictOOM {
		oomScore = 0
	}
	return fmt.Sprintf(`# Written by Kite for the containerd it runs; rewritten at every start.
version = 2
root = %s
state = %s
oom_score = %d

[grpc]
  address = %s

[ttrpc]
  address = %s

[metrics]
  address = ""

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %s
  stream_server_address = "127.0.0.1"
  stream_server_port = %s
  enable_tls_streaming = false
  restrict_oom_score_adj = %t
  max_container_log_line_size = 16384
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = %s
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = %t
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %s
    conf_dir = %s
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %s
`, q(filepath.Join(dir, "root")), q(filepath.Join(dir, "state")), oomScore, q(Socket(dir)), q(Socket(dir)+".ttrpc"),
		q(sandboxImage), q(strconv.Itoa(streamPort)), restrictOOM, q(snapshotter), systemdCgroup,
		q(cniBinDir), q(cniConfDir), q(HostsDir(dir)))
}

// HostsDir is the registry hosts directory (config_path) of a containerd
// Kite runs in dir: one <host[:port]>/hosts.toml per registry that needs
// more than containerd's defaults. containerd reads it at every pull, so
// a registry added while it runs is used from the next pull on.
func HostsDir(dir string) string { return filepath.Join(dir, "certs.d") }

// AddPlainHTTPRegistry makes the containerd in dir reach the registry at
// host (host:port) over plain HTTP, as a registry on 127.0.0.1 without
// TLS needs (containerd would speak HTTPS to it), through a hosts.toml.
func AddPlainHTTPRegistry(dir, host string) error {
	if host == "" || strings.ContainsAny(host, "/\"\n") {
		return fmt.Errorf("containerd: registry host %q: want host or host:port", host)
	}
	d := filepath.Join(HostsDir(dir), host)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return fmt.Errorf("containerd: registry %s: %w", host, err)
	}
	toml := fmt.Sprintf("# Written by Kite: %[1]s is reached over plain HTTP.\nserver = \"http://%[1]s\"\n\n[host.\"http://%[1]s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", host)
	if err := os.WriteFile(filepath.Join(d, "hosts.toml"), []byte(toml), 0o644); err != nil {
		return fmt.Errorf("containerd: registry %s: %w", host, err)
	}
	return nil
}

// Start writes the configuration and starts containerd, and returns once
// its socket accepts connections. ctx bounds the start only: the process
// runs until Stop.
func Start(ctx context.Context, opts Options) (*Process, error) {
	if opts.Dir == "" {
		return nil, errors.New("containerd: no directory given")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("containerd: directory %s: %w", opts.Dir, err)
	}
	if err := Available(opts.Binary); err != nil {
		return nil, err
	}
	bin := opts.Binary
	if bin == "" {
		bin = "containerd"
	}
	systemd := false
	if opts.SystemdCgroup != nil {
		systemd = *opts.SystemdCgroup
	} else if _, err := os.Stat("/run/systemd/system"); err == nil {
		systemd = true
	}
	image := opts.SandboxImage
	if image == "" {
		image = PauseImage
	}
	if err := os.MkdirAll(filepath.Join(dir, "root"), 0o700); err != nil {
		return nil, fmt.Errorf("containerd: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cfg := Config(dir, image, snapshotter(dir), systemd, !hasCapSysResource(), port, opts.CNIConfDir, opts.CNIBinDir)
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, fmt.Errorf("containerd: %w", err)
	}
	logf, err := os.OpenFile(filepath.Join(dir, "containerd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("containerd: %w", err)
	}
	defer logf.Close()
	// A socket left by a containerd that died would make the wait below
	// succeed too early or the new one fail to listen.
	os.Remove(Socket(dir))
	cmd := exec.Command(bin, "--config", cfgPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: a Ctrl-C to the agent's group reaches the
	// agent, which stops containerd itself; the shims containerd starts
	// are in sessions of their own anyway.
	// (No Pdeathsig: it fires when the forking thread ends, not the
	// process; a containerd left by an agent that was killed is stopped by
	// the next start instead, below.)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pidPath := filepath.Join(dir, "containerd.pid")
	stopLeftover(pidPath, cfgPath)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("containerd: start %s: %w", bin, err)
	}
	os.WriteFile(pidPath, []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
	p := &Process{cmd: cmd, done: make(chan struct{}), endpoint: "unix://" + Socket(dir), systemd: systemd}
	go func() { // ends with the process
		p.err = cmd.Wait()
		close(p.done)
	}()
	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		if c, err := net.Dial("unix", Socket(dir)); err == nil {
			c.Close()
			klog.FromContext(ctx).Info("containerd started", "pid", cmd.Process.Pid, "config", cfgPath, "endpoint", p.endpoint)
			return p, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("containerd: exited at start (%v); see %s: %s", p.err, filepath.Join(dir, "containerd.log"), tail(filepath.Join(dir, "containerd.log")))
		case <-wctx.Done():
			p.Stop()
			return nil, fmt.Errorf("containerd: socket %s not up within %s: %w", Socket(dir), timeout, wctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Stop ends containerd (SIGTERM, SIGKILL after 10 s) and waits for it.
// Its containers keep running.
func (p *Process) Stop() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
	return nil
}

// stopLeftover stops a containerd that an earlier agent started on this
// configuration and left running (it was killed): two containerds on one
// root would fight over its database. A process is taken for it only if
// its command line names the configuration.
func stopLeftover(pidPath, cfgPath string) {
	b, err := os.ReadFile(pidPath)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !bytes.Contains(cmdline, []byte(cfgPath)) {
		return
	}
	syscall.Kill(pid, syscall.SIGTERM)
	for i := 0; i < 500; i++ {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
}

// snapshotter is overlayfs unless dir is on a file system an overlay
// cannot have as its upper directory (overlay, tmpfs of old kernels...),
// then native: containerd's overlayfs plugin refuses such a root and the
// CRI plugin with it.
func snapshotter(dir string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "overlayfs"
	}
	const overlayMagic = 0x794c7630
	if st.Type == overlayMagic {
		return "native"
	}
	return "overlayfs"
}

// hasCapSysResource says whether this process has CAP_SYS_RESOURCE
// (bit 24 of CapEff), which lowering an OOM score adjustment needs.
func hasCapSysResource() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<24) != 0
		}
	}
	return false
}

// freePort is a free TCP port on 127.0.0.1 for the streaming server.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("containerd: a port for the streaming server: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail is the last lines of a log, for an error.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 2048 {
		b = b[len(b)-2048:]
	}
	return strings.TrimSpace(string(bytes.ToValidUTF8(b, nil)))
}
