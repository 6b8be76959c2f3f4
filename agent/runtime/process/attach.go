package process

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	kiteruntime "github.com/kite-project/kite/agent/runtime"
	"github.com/kite-project/kite/agent/runtime/process/supervisor"
)

// Attach connects to a running container started with stdin or a tty, as
// containerd's attach does: stdin (nil for none) goes to the container's
// standard input, and its end to the session's (which ends the
// container's with stdinOnce); each size from resize is applied to its
// terminal; what the container writes from now on goes to stdout and
// stderr (all to stdout on a terminal), until it exits or ctx ends. A
// container started with neither has no attach socket: the error wraps
// errors.ErrUnsupported, and its output is its log's to follow.
func (r *Runtime) Attach(ctx context.Context, containerID string, stdin io.Reader, stdout, stderr io.Writer, resize <-chan kiteruntime.TerminalSize) error {
	r.mu.Lock()
	c := r.containers[containerID]
	r.mu.Unlock()
	if c == nil {
		return fmt.Errorf("attach to container %s: not found", containerID)
	}
	if !c.spec.Stdin && !c.spec.TTY {
		return fmt.Errorf("attach to container %s: started without stdin or a tty: %w", containerID, errors.ErrUnsupported)
	}
	path, done, err := supervisor.SocketPath(c.dir, supervisor.AttachSocket)
	if err != nil {
		return fmt.Errorf("attach to container %s: %w", containerID, err)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	done()
	if err != nil {
		return fmt.Errorf("attach to container %s: %w", containerID, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer conn.Close()
	stopClose := context.AfterFunc(ctx, func() { conn.Close() })
	defer stopClose()
	br := bufio.NewReader(conn)
	buf := make([]byte, supervisor.MaxFrame)
	// Output written before the session was registered is not ours to
	// see: stdin goes in only once it is.
	if kind, _, err := supervisor.ReadFrame(br, buf); err != nil || kind != supervisor.FrameReady {
		return fmt.Errorf("attach to container %s: no session (%v)", containerID, err)
	}
	var wmu sync.Mutex
	send := func(kind byte, p []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		return supervisor.WriteFrame(conn, kind, p)
	}
	if stdin != nil && c.spec.Stdin {
		// Ends at stdin's end, or at its first read after conn closed
		// (the streams close once Attach returned).
		if err := send(supervisor.FrameStdin, nil); err != nil {
			return fmt.Errorf("attach to container %s: %w", containerID, err)
		}
		go func() {
			buf := make([]byte, supervisor.MaxFrame)
			for {
				n, err := stdin.Read(buf)
				if n > 0 && send(supervisor.FrameStdin, buf[:n]) != nil {
					return
				}
				if err != nil {
					send(supervisor.FrameStdinEnd, nil)
					return
				}
			}
		}()
	}
	if resize != nil && c.spec.TTY {
		go func() { // ends with resize or ctx
			var b [4]byte
			for {
				select {
				case <-ctx.Done():
					return
				case sz, ok := <-resize:
					if !ok {
						return
					}
					binary.BigEndian.PutUint16(b[0:2], sz.Width)
					binary.BigEndian.PutUint16(b[2:4], sz.Height)
					if send(supervisor.FrameResize, b[:]) != nil {
						return
					}
				}
			}
		}()
	}
	for {
		kind, p, err := supervisor.ReadFrame(br, buf)
		if err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil // the container exited, or the client went
			}
			return fmt.Errorf("attach to container %s: %w", containerID, err)
		}
		w := stdout
		if kind == supervisor.FrameStderr && !c.spec.TTY {
			w = stderr
		}
		if w != nil {
			if _, err := w.Write(p); err != nil {
				return nil // the client went
			}
		}
	}
}
