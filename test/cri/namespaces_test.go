package cri

import (
	"os"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestPodNamespacesOnContainerd: the PID and IPC namespaces containerd
// gives a pod's containers are those the kubelet asks for: each
// container its own PID namespace (its command is its PID 1) unless the
// pod sets shareProcessNamespace (the pause process is PID 1 of all, and
// each sees the other's processes) or hostPID (the node's PID 1); the
// pod's IPC namespace, shared by its containers, unless hostIPC (the
// node's).
func TestPodNamespacesOnContainerd(t *testing.T) {
	a := startAgent(t, "cri-namespaces", t.TempDir())
	hostInit, err := os.ReadFile("/proc/1/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	hostIPC, err := os.Readlink("/proc/self/ns/ipc")
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	cases := []struct {
		name string
		spec func(*v1.PodSpec)
		// pid1 is what PID 1's command line must say in container "a"
		// and in container "b"; seesOther is whether "a" sees "b"'s
		// sleep; ipcIsHosts whether both are in the node's IPC namespace.
		pid1a, pid1b string
		seesOther    bool
		ipcIsHosts   bool
	}{
		{"each container its own", nil, "sleep 3601", "sleep 3602", false, false},
		{"shareProcessNamespace", func(s *v1.PodSpec) { s.ShareProcessNamespace = &yes }, "/pause", "/pause", true, false},
		{"hostPID", func(s *v1.PodSpec) { s.HostPID = true }, cmdline(hostInit), cmdline(hostInit), true, false},
		{"hostIPC", func(s *v1.PodSpec) { s.HostIPC = true }, "sleep 3601", "sleep 3602", false, true},
	}
	pods := make([]*v1.Pod, len(cases))
	for i, tc := range cases {
		pods[i] = a.pod(t, strings.ToLower(strings.ReplaceAll(tc.name, " ", "-")), func(p *v1.Pod) {
			p.Spec.Containers[0].Name = "a"
			p.Spec.Containers[0].Args = []string{"sleep", "3601"}
			b := *p.Spec.Containers[0].DeepCopy()
			b.Name, b.Args = "b", []string{"sleep", "3602"}
			p.Spec.Containers = append(p.Spec.Containers, b)
			if tc.spec != nil {
				tc.spec(&p.Spec)
			}
		})
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := a.wait(t, pods[i], "both containers running", func(p *v1.Pod) bool {
				return p.Status.Phase == v1.PodRunning && len(p.Status.ContainerStatuses) == 2 &&
					p.Status.ContainerStatuses[0].State.Running != nil && p.Status.ContainerStatuses[1].State.Running != nil
			})
			in := func(container string) *v1.Pod {
				q := p.DeepCopy()
				if container == "b" {
					q.Spec.Containers = q.Spec.Containers[1:]
				}
				return q
			}
			ipc := map[string]string{}
			for _, c := range []struct{ name, pid1 string }{{"a", tc.pid1a}, {"b", tc.pid1b}} {
				out, err := a.exec(t, in(c.name), "sh", "-c", `tr '\0' ' ' </proc/1/cmdline; echo; readlink /proc/self/ns/ipc`)
				if err != nil {
					t.Fatalf("exec in %s: %v\n%s", c.name, err, out)
				}
				got, ns, _ := strings.Cut(out, "\n")
				if strings.TrimSpace(got) != c.pid1 {
					t.Errorf("container %s: PID 1 is %q; want %q", c.name, strings.TrimSpace(got), c.pid1)
				}
				ipc[c.name] = strings.TrimSpace(ns)
			}
			if ipc["a"] != ipc["b"] {
				t.Errorf("IPC namespaces %s and %s; want the pod's one", ipc["a"], ipc["b"])
			}
			if (ipc["a"] == hostIPC) != tc.ipcIsHosts {
				t.Errorf("IPC namespace %s, the node's %s; want the node's: %v", ipc["a"], hostIPC, tc.ipcIsHosts)
			}
			out, err := a.exec(t, in("a"), "ps", "-o", "args")
			if err != nil {
				t.Fatalf("ps in a: %v\n%s", err, out)
			}
			if strings.Contains(out, "sleep 3602") != tc.seesOther {
				t.Errorf("ps in a:\n%s\nwant b's sleep 3602 seen: %v", out, tc.seesOther)
			}
		})
	}
}

// cmdline is /proc/<pid>/cmdline as ps shows it.
func cmdline(b []byte) string {
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}
