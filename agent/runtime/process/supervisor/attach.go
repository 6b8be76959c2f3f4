package supervisor

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// AttachSocket is the unix socket, in the container's directory, on which
// the supervisor of a container started with stdin or a tty serves attach
// sessions: what containerd's shim does with the container's stdin FIFO
// and its output broadcast. Containers without either have no socket
// (attach follows their log): a socket and a goroutine for every
// container's whole life would be paid for by all.
const AttachSocket = "attach.sock"

// An attach session is one connection carrying frames both ways: a kind
// byte, a big-endian uint32 length, the payload.
const (
	FrameReady    = 'k' // supervisor → agent, first: output from now on reaches the session
	FrameStdin    = 'i' // agent → supervisor: bytes for the container's stdin (an empty one first: the session has stdin)
	FrameStdinEnd = 'e' // agent → supervisor: the client's stdin ended
	FrameResize   = 'r' // agent → supervisor: width, height as uint16s
	FrameStdout   = 'o' // supervisor → agent: what the container wrote
	FrameStderr   = 'E'
	MaxFrame      = 32 << 10
	// sessionBacklog is how many output frames wait for a slow session
	// before it is dropped: the container never waits for an attacher.
	sessionBacklog = 256
	// sessionWriteTimeout bounds a write to a session, so a stuck
	// agent cannot hold the supervisor at the container's exit.
	sessionWriteTimeout = 5 * time.Second
)

// WriteFrame writes one attach frame.
func WriteFrame(w io.Writer, kind byte, p []byte) error {
	b := make([]byte, 5+len(p))
	b[0] = kind
	binary.BigEndian.PutUint32(b[1:5], uint32(len(p)))
	copy(b[5:], p)
	_, err := w.Write(b)
	return err
}

// ReadFrame reads one frame; its payload is valid until the next call.
func ReadFrame(r *bufio.Reader, buf []byte) (byte, []byte, error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:5])
	if n > MaxFrame {
		return 0, nil, fmt.Errorf("attach frame of %d bytes: more than %d", n, MaxFrame)
	}
	if _, err := io.ReadFull(r, buf[:n]); err != nil {
		return 0, nil, err
	}
	return h[0], buf[:n], nil
}

// SocketPath names a socket in dir by a path short enough for sun_path
// (108 bytes), whatever dir's length: /proc/self/fd/<n>/name through a
// descriptor of dir, closed by the returned func once the socket is bound
// or connected.
func SocketPath(dir, name string) (string, func(), error) {
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", nil, fmt.Errorf("open %s: %w", dir, err)
	}
	return "/proc/self/fd/" + strconv.Itoa(fd) + "/" + name, func() { syscall.Close(fd) }, nil
}

// attachServer is the supervisor's side of attach: it writes sessions'
// stdin into the container's, applies their terminal sizes and sends each
// of them what the container writes.
type attachServer struct {
	ln    *os.File // the listening socket (listenUnix)
	path  string
	stdin io.Writer // the pipe's write end or the terminal; nil without stdin
	// closeStdin ends the container's stdin (a pipe's EOF); nil for a
	// terminal, whose input cannot end short of closing its output too.
	closeStdin func()
	term       *os.File // the terminal's master, for sizes; nil without
	once       bool     // stdinOnce: stdin ends with the first session's
	wg         sync.WaitGroup

	mu          sync.Mutex
	sessions    map[*attachSession]struct{}
	stdinClosed bool
	stopped     bool
}

type attachSession struct {
	conn      *os.File    // a pollable socket, as net.Conn would be
	out       chan []byte // encoded frames
	usedStdin bool        // receive's own
}

// serveAttach listens on dir's attach socket.
func serveAttach(dir string, stdin io.Writer, closeStdin func(), term *os.File, once bool) (*attachServer, error) {
	addr, done, err := SocketPath(dir, AttachSocket)
	if err != nil {
		return nil, err
	}
	path := joinPath(dir, AttachSocket)
	os.Remove(path) // a previous supervisor's, killed (one supervisor per container holds the lock)
	ln, err := listenUnix(addr)
	done()
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	s := &attachServer{ln: ln, path: path, stdin: stdin, closeStdin: closeStdin, term: term, once: once, sessions: map[*attachSession]struct{}{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

func (s *attachServer) accept() {
	defer s.wg.Done()
	for {
		conn, err := acceptUnix(s.ln)
		if errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return // the listener closed in stop
		}
		sess := &attachSession{conn: conn, out: make(chan []byte, sessionBacklog)}
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			conn.Close()
			return
		}
		s.sessions[sess] = struct{}{}
		sess.out <- []byte{FrameReady, 0, 0, 0, 0}
		s.mu.Unlock()
		s.wg.Add(2)
		go s.send(sess)
		go s.receive(sess)
	}
}

// send writes the session's frames until stop closes its channel or the
// agent stops reading.
func (s *attachServer) send(sess *attachSession) {
	defer s.wg.Done()
	defer sess.conn.Close()
	for b := range sess.out {
		sess.conn.SetWriteDeadline(time.Now().Add(sessionWriteTimeout))
		if _, err := sess.conn.Write(b); err != nil {
			s.drop(sess)
			for range sess.out { // until stop or drop closed it
			}
			return
		}
	}
}

// receive carries out the session's frames until it ends; with stdinOnce
// the container's stdin ends with the first session that had stdin.
func (s *attachServer) receive(sess *attachSession) {
	defer s.wg.Done()
	defer s.drop(sess)
	r := bufio.NewReader(sess.conn)
	buf := make([]byte, MaxFrame)
	defer func() {
		if sess.usedStdin {
			s.stdinEnded()
		}
	}()
	for {
		kind, p, err := ReadFrame(r, buf)
		if err != nil {
			return
		}
		switch kind {
		case FrameStdin:
			sess.usedStdin = true
			if s.stdin != nil && len(p) > 0 && !s.isStdinClosed() {
				s.stdin.Write(p) // a container that is gone or reads no more: dropped
			}
		case FrameStdinEnd:
			s.stdinEnded()
		case FrameResize:
			if s.term != nil && len(p) == 4 {
				setWinsize(s.term, binary.BigEndian.Uint16(p[0:2]), binary.BigEndian.Uint16(p[2:4]))
			}
		}
	}
}

func (s *attachServer) isStdinClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stdinClosed
}

// stdinEnded ends the container's stdin when it is stdinOnce and a pipe
// (containerd closes no terminal's input either): no later session gets
// to write to it.
func (s *attachServer) stdinEnded() {
	if !s.once || s.closeStdin == nil {
		return
	}
	s.mu.Lock()
	closed := s.stdinClosed
	s.stdinClosed = true
	s.mu.Unlock()
	if !closed && s.closeStdin != nil {
		s.closeStdin()
	}
}

// drop forgets a session: its sender ends once its frames are out.
func (s *attachServer) drop(sess *attachSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sessions[sess]; ok {
		delete(s.sessions, sess)
		close(sess.out)
	}
}

// output returns a writer of the container's stream: each write goes to
// every session as a frame, and a session too slow to take it is dropped.
func (s *attachServer) output(kind byte) io.Writer {
	return broadcast{s: s, kind: kind}
}

type broadcast struct {
	s    *attachServer
	kind byte
}

func (b broadcast) Write(p []byte) (int, error) {
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for rest := p; len(rest) > 0 && len(s.sessions) > 0; {
		n := min(len(rest), MaxFrame)
		frame := make([]byte, 5+n)
		frame[0] = b.kind
		binary.BigEndian.PutUint32(frame[1:5], uint32(n))
		copy(frame[5:], rest[:n])
		rest = rest[n:]
		for sess := range s.sessions {
			select {
			case sess.out <- frame:
			default: // too slow: dropped, as the container must not wait
				delete(s.sessions, sess)
				close(sess.out)
				sess.conn.Close()
			}
		}
	}
	return len(p), nil
}

// stop closes the socket and, once each session's frames are out (the
// container's output all read by now), the sessions; the agent's attach
// sees EOF.
func (s *attachServer) stop() {
	s.mu.Lock()
	s.stopped = true
	for sess := range s.sessions {
		delete(s.sessions, sess)
		close(sess.out)
	}
	s.mu.Unlock()
	s.ln.Close()
	os.Remove(s.path)
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(sessionWriteTimeout):
	}
}

// ptyOutput reads a terminal's master: EIO, once no process holds the
// terminal any more, is its end.
type ptyOutput struct{ *os.File }

func (p ptyOutput) Read(b []byte) (int, error) {
	n, err := p.File.Read(b)
	if errors.Is(err, syscall.EIO) {
		err = io.EOF
	}
	return n, err
}

// listenUnix listens on a unix socket at path. It is what net.ListenUnix
// does, on an *os.File: package net sorts after k8s.io, and importing it
// would have the binary's initialisers run before this package's (see
// init in role.go).
func listenUnix(path string) (*os.File, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	if err := syscall.Listen(fd, syscall.SOMAXCONN); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	// Non-blocking, so the runtime's poller waits for it, and Close
	// ends an accept under way.
	return os.NewFile(uintptr(fd), path), nil
}

// acceptUnix waits for a connection on ln and returns it as a pollable
// file (deadlines work on it as on a net.Conn).
func acceptUnix(ln *os.File) (*os.File, error) {
	rc, err := ln.SyscallConn()
	if err != nil {
		return nil, err
	}
	var nfd int
	var aerr error
	if err := rc.Read(func(fd uintptr) bool {
		nfd, _, aerr = syscall.Accept4(int(fd), syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
		return !errors.Is(aerr, syscall.EAGAIN)
	}); err != nil {
		return nil, err
	}
	if aerr != nil {
		return nil, aerr
	}
	return os.NewFile(uintptr(nfd), "attach session"), nil
}
