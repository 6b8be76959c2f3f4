package cri

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestBusyBoxImageWgetTakesATimeout: the busybox image's wget answers
// with and without -T, run directly (kubectl exec/run) and from the
// image's sh (busybox's applet), and -T ends a download the server never
// answers. Debian's busybox, which the image is made of, died of SIGSEGV
// (exit 139) on any -T (scripts/images, busybox_rootfs, says why).
func TestBusyBoxImageWgetTakesATimeout(t *testing.T) {
	a := startAgent(t, "cri-wget", t.TempDir())
	p := a.pod(t, "wget", func(p *v1.Pod) {
		// busybox's httpd serves a page; nc accepts a connection and
		// never answers it (its input a pipe that stays open: on EOF it
		// would close the connection).
		p.Spec.Containers[0].Args = []string{"sh", "-c",
			"mkdir -p /tmp/www && echo hello > /tmp/www/index.html && httpd -p 127.0.0.1:18099 -h /tmp/www && " +
				"{ sleep 3600 | nc -l -p 18098 >/dev/null & } && exec sleep 3600"}
	})
	a.wait(t, p, "Running", running)
	const url = "http://127.0.0.1:18099/"
	for _, tc := range []struct {
		name string
		cmd  []string
	}{
		{"without -T", []string{"wget", "-qO-", url}},
		{"-T SEC", []string{"wget", "-qO-", "-T", "5", url}},
		{"-TSEC first", []string{"wget", "-T5", "-qO-", url}},
		{"--timeout=SEC", []string{"wget", "-q", "--timeout=5", "-O-", url}},
		{"-T from the image's sh", []string{"sh", "-c", "wget -qO- -T 5 " + url}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out string
			var err error
			// httpd starts in the background of the pod's command.
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); <-timeAfter(200) {
				if out, err = a.exec(t, p, tc.cmd...); err == nil && out == "hello\n" {
					return
				}
			}
			t.Errorf("exec %q = %q, %v; want the page", tc.cmd, out, err)
		})
	}
	t.Run("-T ends a download", func(t *testing.T) {
		start := time.Now()
		out, err := a.exec(t, p, "wget", "-qO-", "-T", "1", "http://127.0.0.1:18098/")
		took := time.Since(start)
		if err == nil || !strings.Contains(err.Error(), "exit code 1") || !strings.Contains(out, "download timed out") || took > 10*time.Second {
			t.Errorf("wget -T 1 from a server that never answers = %q, %v after %v; want wget's time-out, exit code 1, within seconds", out, err, took)
		}
	})
}
