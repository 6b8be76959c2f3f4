package supervisor

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

// reportFD is the supervisor's end of the pipe to the agent that started
// it: one line, "ok" once the command runs or "error: <why>".
const reportFD = 3

const (
	// exitCodeStartError and reasonStartError are what containerd records
	// for a container whose command could not start.
	exitCodeStartError = 128
	reasonStartError   = "StartError"
	// drainTimeout bounds how long the supervisor waits, once the
	// container's first process is gone and the rest killed, for its
	// stdout and stderr to reach EOF (a process that escaped the group
	// and the cgroup may hold them forever).
	drainTimeout = 2 * time.Second
)

// superviseMain is a container's supervisor, the process that plays
// conmon's or containerd-shim's part: it holds the container's stdout and
// stderr pipes and writes them to the CRI log, waits for the container,
// and records how it ended in exit.json. It runs in its own session, so
// neither a signal to the agent's process group nor the agent's exit
// reaches it, and it is a child subreaper, so the container's orphaned
// processes are reparented to it and reaped.
func superviseMain(dir string) int {
	// Caught and dropped, not ignored: an ignored signal stays ignored
	// across exec, and a shell cannot trap a TERM it was started with
	// ignored. Nothing reads the channel; signals past its one slot drop.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	syscall.CloseOnExec(reportFD)
	restore := startingAutogroupNice()
	report := os.NewFile(reportFD, "report")
	err := supervise(dir, func(err error) {
		restore()
		if err != nil {
			fmt.Fprintf(report, "error: %v\n", err)
		} else {
			fmt.Fprintln(report, "ok")
		}
		report.Close()
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "supervise %s: %v\n", dir, err)
		return 1
	}
	return 0
}

// startingNice is the nice value of a supervisor's autogroup while it
// starts its container.
const startingNice = "10"

// startingAutogroupNice gives this supervisor's scheduling autogroup a
// lower weight until the returned function is called (once the command
// runs or could not start), and does nothing where the kernel has no
// autogroups.
//
// Where the agent runs in the root cpu cgroup (no systemd unit, a v1 host,
// a shell), the kernel's autogroup scheduling gives every session the
// weight of one process, and a supervisor is a session of its own
// (setsid). A node starting 100 containers at once then had 100 sessions
// of start-up work against the agent's one, and the agent's own calls
// starved: reading the Node before the first mirror pod took 200-650 ms,
// as long as the supervisors were starting. At nice 10 a starting
// supervisor weighs about a ninth of the agent; idle once its container
// runs, it goes back to 0, which needs no privilege, so a chatty
// container's log is copied at the usual weight. A supervisor in a cpu
// cgroup other than the root (a systemd unit) is not scheduled by
// autogroup at all, and this changes nothing.
func startingAutogroupNice() (restore func()) {
	const path = "/proc/self/autogroup"
	if err := os.WriteFile(path, []byte(startingNice), 0); err != nil {
		return func() {}
	}
	return func() { os.WriteFile(path, []byte("0"), 0) }
}

// supervise starts the container described in dir and waits for it;
// started is called once, with nil when the command runs.
func supervise(dir string, started func(error)) error {
	// One supervisor per container, ever: the lock is held until this
	// process exits, so a start repeated by a restarted agent that did
	// not see started.json yet fails here instead of running a second
	// copy, and leaves the first one's records alone.
	lock, err := os.OpenFile(joinPath(dir, supervisorLock), os.O_RDWR|os.O_CREATE, 0o600)
	if err == nil {
		err = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if err != nil {
		err = fmt.Errorf("container is already supervised (%s): %w", supervisorLock, err)
		started(err)
		return err
	}
	defer lock.Close()
	var spec ContainerSpec
	if err := ReadRecord(dir, SpecFile, &spec); err != nil {
		started(err)
		return err
	}
	guard := &startGuard{}
	watchAbandon(guard, dir, spec)
	startFailed := func(err error) error {
		guard.failed()
		werr := WriteRecord(dir, ExitFile, ExitRecord{
			ExitCode: exitCodeStartError, FinishedAt: time.Now().UnixNano(),
			Reason: reasonStartError, Message: err.Error(),
		})
		started(err)
		return errors.Join(err, werr)
	}
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return startFailed(fmt.Errorf("become child subreaper: %w", errno))
	}
	log, err := openLogWriter(spec.LogPath, spec.LogMaxSize, spec.LogMaxFiles)
	if err != nil {
		return startFailed(err)
	}
	defer log.close()

	pid, attach, err := startContainer(dir, spec, log, guard)
	if err != nil {
		if pid > 0 { // runs, but unrecorded: it must not run on
			syscall.Kill(-pid, syscall.SIGKILL) // not reaped yet: still ours
			spec.Cgroup.Kill()
			waitFor(pid, nil)
		}
		if attach != nil {
			attach.stop()
		}
		return startFailed(err)
	}
	started(nil)
	var finishedAt int64
	// The container is its first process: once that is gone, the rest
	// of its process group and cgroup go too, as a PID namespace's would.
	code, signaled := waitFor(pid, func() {
		finishedAt = time.Now().UnixNano()
		syscall.Kill(-pid, syscall.SIGKILL)
	})
	spec.Cgroup.Kill()
	reapAll(drainTimeout)
	log.drained(drainTimeout)

	rec := ExitRecord{ExitCode: int32(code), FinishedAt: finishedAt, Reason: "Error"}
	switch {
	case spec.Cgroup.OOMKills() > 0:
		rec.Reason = "OOMKilled"
	case code == 0 && !signaled:
		rec.Reason = "Completed"
	}
	err = WriteRecord(dir, ExitFile, rec)
	if attach != nil {
		// The output is all out (drained above): the sessions end.
		attach.stop()
	}
	return err
}

// startContainer starts the container's command with its stdout and
// stderr going to log (and to attach sessions, where it has stdin or a
// tty), and records it in started.json once it runs. It returns the
// container's PID, also with an error if the command runs but could not
// be recorded, and the attach server, if any, for the caller to stop.
func startContainer(dir string, spec ContainerSpec, log *logWriter, guard *startGuard) (int, *attachServer, error) {
	st, err := openStdio(spec)
	if err != nil {
		return 0, nil, err
	}
	pid, err := startCommand(dir, spec, st.stdin, st.stdout, st.stderr, guard)
	st.closeChildEnds()
	var self, ident ProcIdentity
	var attach *attachServer
	if err == nil {
		// Not reaped yet (the supervisor reaps with wait4), so the PID
		// is still the command's.
		self, err = Identify(os.Getpid())
		if err == nil {
			ident, err = Identify(pid)
		}
		if err == nil && (spec.Stdin || spec.TTY) {
			attach, err = serveAttach(dir, st.input, st.closeInput, st.term, spec.StdinOnce)
		}
		if err != nil {
			syscall.Kill(-pid, syscall.SIGKILL)
			waitFor(pid, nil)
		}
	}
	if err != nil {
		st.closeOurEnds()
		return 0, nil, err
	}
	var tee func(kind byte) io.Writer
	if attach != nil {
		tee = attach.output
	}
	if st.term != nil {
		log.copy(ptyOutput{st.term}, "stdout", tee, FrameStdout)
	} else {
		log.copy(st.outR, "stdout", tee, FrameStdout)
		log.copy(st.errR, "stderr", tee, FrameStderr)
	}
	boot, err := ReadBootID()
	if err != nil {
		return pid, attach, err
	}
	return pid, attach, guard.commit(func() error {
		return WriteRecord(dir, StartedFile, StartedRecord{Process: ident, Supervisor: self, StartedAt: time.Now().UnixNano(), BootID: boot})
	})
}

// stdio is a container's standard streams: the child's ends, which the
// supervisor closes once the command started, and its own.
type stdio struct {
	stdin, stdout, stderr *os.File // the child's
	child                 []*os.File

	outR, errR *os.File // output pipes (no terminal)
	term       *os.File // the terminal's master (TTY)
	input      io.Writer
	closeInput func()
	ours       []*os.File
}

// openStdio opens a container's streams: output pipes, and stdin from
// /dev/null; or, with Stdin, a pipe the supervisor writes; or, with TTY,
// a new terminal for all three.
func openStdio(spec ContainerSpec) (st stdio, err error) {
	defer func() {
		if err != nil {
			st.closeChildEnds()
			st.closeOurEnds()
		}
	}()
	if spec.TTY {
		ptmx, tty, err := openPTY()
		if err != nil {
			return st, fmt.Errorf("open a terminal: %w", err)
		}
		st.term, st.ours = ptmx, append(st.ours, ptmx)
		st.stdin, st.stdout, st.stderr, st.child = tty, tty, tty, []*os.File{tty}
		if spec.Stdin {
			st.input = ptmx
		}
		return st, nil
	}
	if spec.Stdin {
		inR, inW, err := os.Pipe()
		if err != nil {
			return st, err
		}
		st.stdin, st.child = inR, append(st.child, inR)
		st.input, st.closeInput, st.ours = inW, func() { inW.Close() }, append(st.ours, inW)
	} else {
		devNull, err := os.Open(os.DevNull)
		if err != nil {
			return st, err
		}
		st.stdin, st.child = devNull, append(st.child, devNull)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return st, err
	}
	st.outR, st.stdout, st.child, st.ours = outR, outW, append(st.child, outW), append(st.ours, outR)
	errR, errW, err := os.Pipe()
	if err != nil {
		return st, err
	}
	st.errR, st.stderr, st.child, st.ours = errR, errW, append(st.child, errW), append(st.ours, errR)
	return st, nil
}

func (st *stdio) closeChildEnds() {
	for _, f := range st.child {
		f.Close()
	}
	st.child = nil
}

func (st *stdio) closeOurEnds() {
	for _, f := range st.ours {
		f.Close()
	}
	st.ours = nil
}

// startCommand starts the container's command with stdin, stdout and
// stderr, in a session of its own, and returns its PID once it runs. Where
// the command must get mounts before it execs, it starts the container's
// init (see initMain), which binds them and execs it. Otherwise it execs
// the command directly, in its cgroups from its creation: a v2 cgroup is
// joined as part of clone3 (CgroupFD), v1 cgroups by forking from a
// thread that joined them first (startInV1Cgroups); os.StartProcess
// reports a failed exec itself. That saves starting this binary a second
// time, the larger part of a container's start on a v1 host.
func startCommand(dir string, spec ContainerSpec, stdin, stdout, stderr *os.File, guard *startGuard) (int, error) {
	// oom_score_adj is inherited through fork: the supervisor takes the
	// container's value for the moment of the fork, so the command has it
	// from its first instruction, then takes its own back.
	if adj := spec.OOMScoreAdj; adj != nil {
		own, err := os.ReadFile("/proc/self/oom_score_adj")
		if err != nil {
			return 0, fmt.Errorf("read oom_score_adj: %w", err)
		}
		if err := setOOMScoreAdj(os.Getpid(), adj); err != nil {
			return 0, err
		}
		defer os.WriteFile("/proc/self/oom_score_adj", own, 0)
	}
	c := spec.Cgroup
	if len(spec.Mounts) == 0 {
		return guard.fork(func() (int, error) {
			if c.Memory == "" && c.CPU == "" && c.Pids == "" {
				return startDirect(spec, stdin, stdout, stderr)
			}
			return startInV1Cgroups(spec, stdin, stdout, stderr)
		})
	}
	initR, initW, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer initR.Close()
	sys := &syscall.SysProcAttr{Setsid: true, Setctty: spec.TTY}
	if len(spec.Mounts) > 0 {
		// A private mount namespace for the container: Go makes "/"
		// recursively private in the child before exec, so init's binds
		// never propagate to the host.
		sys.Unshareflags = syscall.CLONE_NEWNS
	}
	pid, err := guard.fork(func() (int, error) {
		proc, err := os.StartProcess(SelfExe, []string{"kite-container-init", dir}, &os.ProcAttr{
			Dir:   "/",
			Env:   []string{RoleEnv + "=" + roleInit, "GOMAXPROCS=1"},
			Files: []*os.File{stdin, stdout, stderr, initW},
			Sys:   sys,
		})
		if err != nil {
			return 0, err
		}
		// The supervisor reaps with wait4(-1): it is the subreaper of all
		// the container's processes, not only of this one.
		pid := proc.Pid
		proc.Release()
		return pid, nil
	})
	initW.Close()
	if errors.Is(err, errAbandoned) {
		return 0, err
	}
	if err != nil {
		return 0, fmt.Errorf("start container init: %w", err)
	}
	if msg, _ := io.ReadAll(initR); len(msg) > 0 {
		syscall.Kill(-pid, syscall.SIGKILL) // not reaped yet: still ours
		waitFor(pid, nil)
		return 0, errors.New(string(msg))
	}
	return pid, nil
}

// startInV1Cgroups execs the command directly with its v1 cgroups joined
// from its creation. v1 has no clone into a cgroup, but it places threads
// one by one ("tasks"), and a child starts in the cgroups of the thread
// that forked it. So a goroutine locked to a thread of its own moves that
// thread into the container's cgroups, forks the command from it, and
// ends without unlocking, which ends the thread: the supervisor's other
// threads never enter the container's cgroups. Memory is charged to a
// process's mm owner, so nothing the supervisor allocates meanwhile counts
// against the container, and the thread counts as one task against a
// pids limit while the command starts (init counted all of its threads).
//
// The supervisor's role runs from a package init, on the main thread,
// whose goroutine the Go runtime keeps locked to it until main: the
// locked goroutine here can never be on the main thread, which Go would
// keep (wedged) instead of ending it. It checks that all the same, and
// returns only once the thread is gone, so that nothing reading the
// cgroups afterwards (a stop, a kill of what is left) takes the
// supervisor for one of the container's processes.
func startInV1Cgroups(spec ContainerSpec, stdin, stdout, stderr *os.File) (int, error) {
	type result struct {
		pid, tid int
		err      error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		// Never unlocked: the thread ends with this goroutine.
		tid := syscall.Gettid()
		if tid == os.Getpid() {
			runtime.UnlockOSThread()
			done <- result{err: errors.New("start in v1 cgroups: on the main thread")}
			return
		}
		if err := spec.Cgroup.JoinThread(tid); err != nil {
			done <- result{tid: tid, err: err}
			return
		}
		pid, err := startDirect(spec, stdin, stdout, stderr)
		done <- result{pid, tid, err}
	}()
	r := <-done
	if r.tid != 0 {
		threadGone(r.tid)
	}
	return r.pid, r.err
}

// threadGone waits, at most a second, until thread tid of this process
// has exited: a thread leaves its cgroups as it exits, before its
// /proc/self/task entry goes.
func threadGone(tid int) {
	path := "/proc/self/task/" + strconv.Itoa(tid)
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Microsecond) {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return
		}
	}
}

func startDirect(spec ContainerSpec, stdin, stdout, stderr *os.File) (int, error) {
	path, err := LookPath(spec.Args[0], spec.Env)
	if err != nil {
		return 0, err
	}
	wd := spec.WorkingDir
	if wd == "" {
		wd = "/"
	}
	// On a terminal, the container's session has it as its controlling
	// terminal (Ctty 0: its stdin), so ^C and job control work.
	sys := &syscall.SysProcAttr{Setsid: true, Setctty: spec.TTY, Credential: spec.User.Credential()}
	if spec.Cgroup.Unified != "" {
		cg, err := os.Open(spec.Cgroup.Unified)
		if err != nil {
			return 0, fmt.Errorf("open cgroup: %w", err)
		}
		defer cg.Close()
		sys.UseCgroupFD, sys.CgroupFD = true, int(cg.Fd())
	}
	proc, err := os.StartProcess(path, spec.Args, &os.ProcAttr{
		Dir: wd, Env: spec.Env, Files: []*os.File{stdin, stdout, stderr}, Sys: sys,
	})
	if err != nil {
		return 0, err
	}
	pid := proc.Pid
	proc.Release()
	return pid, nil
}

// waitFor reaps children until pid has exited and returns its exit code
// (128+signal for a signal, as shells and containerd report it). Before
// it reaps pid it calls beforeReap (if not nil): until pid is reaped its
// number cannot be given to another process, so that is when its process
// group can be signalled without any chance of reaching a stranger.
func waitFor(pid int, beforeReap func()) (code int, signaled bool) {
	for {
		exited, err := waitExited()
		if err != nil {
			// ECHILD: nothing left to wait for, pid included.
			return 255, false
		}
		if exited == pid && beforeReap != nil {
			beforeReap()
		}
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(exited, &ws, 0, nil); err != nil && !errors.Is(err, syscall.EINTR) {
			return 255, false
		}
		if exited != pid {
			continue
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal()), true
		}
		return ws.ExitStatus(), false
	}
}

// waitExited waits until a child has exited and returns its PID without
// reaping it (waitid with WNOWAIT).
func waitExited() (int, error) {
	const pAll = 0
	var info [128]byte // siginfo_t; si_pid is at offset 16 on 64-bit Linux
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pAll, 0, uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return 0, errno
		}
		return int(*(*int32)(unsafe.Pointer(&info[16]))), nil
	}
}

// reapAll reaps the container's remaining processes, the killed ones,
// for at most timeout.
func reapAll(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
		case err != nil:
			return
		case got == 0:
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// copy writes the container's stream r to the log until EOF, in its own
// goroutine (of the supervisor process, not the agent); with tee, also to
// tee(kind) as it is read.
func (w *logWriter) copy(r io.ReadCloser, stream string, tee func(kind byte) io.Writer, kind byte) {
	w.streams.Add(1)
	go func() {
		defer w.streams.Done()
		defer r.Close()
		var in io.Reader = r
		if tee != nil {
			in = io.TeeReader(r, tee(kind))
		}
		if err := copyStream(in, stream, w, MaxLogLine); err != nil {
			fmt.Fprintf(os.Stderr, "log %s: %v\n", stream, err)
			io.Copy(io.Discard, r)
		}
	}()
}

// drained waits for the streams being copied to reach EOF, at most
// timeout.
func (w *logWriter) drained(timeout time.Duration) {
	done := make(chan struct{})
	go func() { w.streams.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
	}
}
