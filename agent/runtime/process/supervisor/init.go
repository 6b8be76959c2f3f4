package supervisor

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// initErrorFD is where init reports why it could not exec the command;
// it is close-on-exec, so a successful exec reads as EOF.
const initErrorFD = 3

// DefaultPath is the PATH of a container whose environment has none, as
// containerd gives one.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// initMain is the container's first process before it becomes the
// command: it joins the container's cgroups (so that nothing the command
// forks starts outside them), binds the mounts in the private mount
// namespace its supervisor created for it, becomes the container's user,
// changes to the working directory and execs the command with the container's environment. The
// PID stays the same through exec, so the supervisor's record of it holds.
func initMain(dir string) int {
	syscall.CloseOnExec(initErrorFD)
	fail := func(err error) int {
		errPipe := os.NewFile(initErrorFD, "init-error")
		fmt.Fprint(errPipe, err.Error())
		return 127
	}
	var spec ContainerSpec
	if err := ReadRecord(dir, SpecFile, &spec); err != nil {
		return fail(err)
	}
	if err := spec.Cgroup.Join(os.Getpid()); err != nil {
		return fail(err)
	}
	for _, m := range spec.Mounts {
		if err := bindMount(m); err != nil {
			return fail(err)
		}
	}
	if err := spec.User.Become(); err != nil {
		return fail(err)
	}
	wd := spec.WorkingDir
	if wd == "" {
		wd = "/"
	}
	if err := os.Chdir(wd); err != nil {
		return fail(fmt.Errorf("working directory: %w", err))
	}
	path, err := LookPath(spec.Args[0], spec.Env)
	if err != nil {
		return fail(err)
	}
	err = syscall.Exec(path, spec.Args, spec.Env)
	return fail(fmt.Errorf("exec %s: %w", path, err))
}

// bindMount binds m.Source at m.Target, read-only if asked. A missing
// target is created (a directory, or an empty file for a file source): the
// container shares the host's filesystem, so it appears on the host too.
func bindMount(m Mount) error {
	st, err := os.Stat(m.Source)
	if err != nil {
		return fmt.Errorf("mount %s: %w", m.Source, err)
	}
	if _, err := os.Stat(m.Target); errors.Is(err, os.ErrNotExist) {
		if st.IsDir() {
			err = os.MkdirAll(m.Target, 0o755)
		} else if err = os.MkdirAll(dirOf(m.Target), 0o755); err == nil {
			var f *os.File
			if f, err = os.OpenFile(m.Target, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
				f.Close()
			}
		}
		if err != nil {
			return fmt.Errorf("create mount point %s: %w", m.Target, err)
		}
	}
	if err := syscall.Mount(m.Source, m.Target, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s at %s: %w", m.Source, m.Target, err)
	}
	if m.ReadOnly {
		if err := syscall.Mount("", m.Target, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("make %s read-only: %w", m.Target, err)
		}
	}
	return nil
}

// LookPath resolves name as exec(3p) would with the container's PATH.
func LookPath(name string, env []string) (string, error) {
	return LookPathIn("", name, env)
}

// LookPathIn resolves name as LookPath does, with every path seen under
// root (a process's /proc/<pid>/root, to look through its mounts); the
// path returned is without root.
func LookPathIn(root, name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		if err := executable(root + name); err != nil {
			return "", fmt.Errorf("command %s: %w", name, err)
		}
		return name, nil
	}
	path := DefaultPath
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			path = v
		}
	}
	for _, d := range splitList(path) {
		if d == "" {
			d = "."
		}
		p := joinPath(d, name)
		if executable(root+p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q: not found in $PATH %s", name, path)
}

func executable(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// setOOMScoreAdj sets pid's oom_score_adj (nil: leaves it as inherited).
func setOOMScoreAdj(pid int, adj *int64) error {
	if adj == nil {
		return nil
	}
	path := "/proc/" + strconv.Itoa(pid) + "/oom_score_adj"
	if err := os.WriteFile(path, []byte(strconv.FormatInt(*adj, 10)), 0); err != nil {
		return fmt.Errorf("set oom_score_adj %d: %w", *adj, err)
	}
	return nil
}
