package cri

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite/agent/runtime/cri/critest"
)

const kubectlPath = "/usr/bin/kubectl"

// kubectl runs kubectl against the shared server with stdin and returns
// its combined output.
func kubectl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	if _, err := os.Stat(kubectlPath); err != nil {
		t.Skip("kubectl not installed")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath, append([]string{"--kubeconfig", shared.KubeconfigPath()}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// kubectlInteractive runs kubectl with input on its stdin, typed once a
// second until the output holds want (or for 60 s), then closed.
func kubectlInteractive(t *testing.T, input, want string, args ...string) (string, error) {
	t.Helper()
	if _, err := os.Stat(kubectlPath); err != nil {
		t.Skip("kubectl not installed")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath, append([]string{"--kubeconfig", shared.KubeconfigPath()}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// As a person at a terminal, who types again when nothing answers
	// ("If you don't see a command prompt, try pressing enter"): input
	// typed before the session is attached may not reach the container.
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(out.String(), want) && time.Now().Before(deadline); {
		io.WriteString(stdin, input)
		<-timeAfter(1000)
	}
	stdin.Close()
	err = cmd.Wait()
	return out.String(), err
}

// syncBuffer is a bytes.Buffer that a process writes while the test
// reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// ephemeralStatus is the status of the pod's ephemeral container name.
func ephemeralStatus(p *v1.Pod, name string) *v1.ContainerStatus {
	for i := range p.Status.EphemeralContainerStatuses {
		if p.Status.EphemeralContainerStatuses[i].Name == name {
			return &p.Status.EphemeralContainerStatuses[i]
		}
	}
	return nil
}

// TestKubectlDebugRunsEphemeralContainers: kubectl debug adds an
// ephemeral container through pods/ephemeralcontainers; the agent starts
// it in the pod's sandbox, in the process namespace of its target (it
// sees the target's sleep), reports it in ephemeralContainerStatuses, and
// kubectl logs -c reads it; kubectl debug -i attaches to one; the API
// refuses removing or changing one, as upstream.
func TestKubectlDebugRunsEphemeralContainers(t *testing.T) {
	a := startAgent(t, "cri-debug", t.TempDir())
	p := a.pod(t, "dbg", func(p *v1.Pod) {
		p.Spec.Containers[0].Args = []string{"sleep", "3517"}
	})
	p = a.wait(t, p, "Running", running)

	out, err := kubectl(t, "", "-n", p.Namespace, "debug", p.Name, "--image="+critest.BusyBox, "--target=main", "-c", "debugger", "--", "sh", "-c", "ps -o args")
	if err != nil {
		t.Fatalf("kubectl debug: %v\n%s", err, out)
	}
	p = a.wait(t, p, "the debugger to exit 0", func(p *v1.Pod) bool {
		s := ephemeralStatus(p, "debugger")
		return s != nil && s.State.Terminated != nil && s.State.Terminated.ExitCode == 0
	})
	if s := ephemeralStatus(p, "debugger"); !strings.HasPrefix(s.ContainerID, "containerd://") || s.Ready || s.Image != critest.BusyBox {
		t.Errorf("debugger status %+v: want a containerd:// ID, not ready, image %s", s, critest.BusyBox)
	}
	if out, err := kubectl(t, "", "-n", p.Namespace, "logs", p.Name, "-c", "debugger"); err != nil || !strings.Contains(out, "sleep 3517") {
		t.Errorf("kubectl logs -c debugger: %v\n%s\nwant the target's process (sleep 3517) in the debugger's ps", err, out)
	}

	t.Run("kubectl debug -i attaches", func(t *testing.T) {
		// As someone at a terminal: the input stays open until the
		// answer came (stdin closed at once may end the session before
		// the output is relayed).
		out, err := kubectlInteractive(t, "ping\n", "got ping", "-n", p.Namespace, "debug", "-i", p.Name, "--image="+critest.BusyBox, "--target=main", "-c", "interactive", "--", "sh", "-c", "read x; echo got $x")
		if err == nil && !strings.Contains(out, "got ping") {
			// The container's only stdin is the attach, so its answer in
			// the log shows the input went through it; what the
			// container wrote before kubectl's output stream was relayed
			// is in the log only (kubectl warns of this: "If you don't
			// see a command prompt ...").
			logs, lerr := kubectl(t, "", "-n", p.Namespace, "logs", p.Name, "-c", "interactive")
			if lerr == nil && strings.Contains(logs, "got ping") {
				return
			}
			var status *v1.ContainerStatus
			if got, err := a.cs.CoreV1().Pods(p.Namespace).Get(t.Context(), p.Name, metav1.GetOptions{}); err == nil {
				status = ephemeralStatus(got, "interactive")
			}
			t.Errorf("kubectl debug -i:\n%s\nwant got ping, in its output or the container's log (%v):\n%s\nstatus %+v", out, lerr, logs, status)
			return
		}
		if err != nil {
			t.Errorf("kubectl debug -i: %v\n%s\nwant got ping", err, out)
		}
	})

	t.Run("existing ones may not be removed or changed", func(t *testing.T) {
		cur, err := a.cs.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name   string
			mutate func(*v1.Pod)
			want   string
		}{
			{"remove", func(p *v1.Pod) { p.Spec.EphemeralContainers = p.Spec.EphemeralContainers[1:] }, `existing ephemeral containers "debugger" may not be removed`},
			{"change", func(p *v1.Pod) { p.Spec.EphemeralContainers[0].Image = "other" }, `existing ephemeral containers "debugger" may not be changed`},
			{"ports", func(p *v1.Pod) {
				p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, v1.EphemeralContainer{EphemeralContainerCommon: v1.EphemeralContainerCommon{
					Name: "withports", Image: critest.BusyBox, Ports: []v1.ContainerPort{{ContainerPort: 80}}}})
			}, "spec.ephemeralContainers[2].ports: Forbidden: cannot be set for an Ephemeral Container"},
		} {
			pod := cur.DeepCopy()
			tc.mutate(pod)
			_, err := a.cs.CoreV1().Pods(p.Namespace).UpdateEphemeralContainers(context.Background(), p.Name, pod, metav1.UpdateOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v; want Invalid with %q", tc.name, err, tc.want)
			}
		}
	})
}

// podCondition is the pod's condition of type t, or nil.
func podCondition(p *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// containerStatus is the status of the pod's container name.
func containerStatus(p *v1.Pod, name string) *v1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// TestKubectlPatchResizesInPlace: kubectl patch --subresource resize
// changes a running container's cpu and memory limits in place (its cgroup
// says so, it is not restarted), or by a restart where its resizePolicy
// asks for one; the status reports allocatedResources and resources; a
// resize the node cannot fit is Deferred with the admission's message
// until it is taken back; the API takes no other resource (and drops
// any other field of the patch, as upstream's strategy).
func TestKubectlPatchResizesInPlace(t *testing.T) {
	a := startAgent(t, "cri-resize", t.TempDir())
	res := func(reqCPU, reqMem, limCPU, limMem string) v1.ResourceRequirements {
		return v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(reqCPU), v1.ResourceMemory: resource.MustParse(reqMem)},
			Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse(limCPU), v1.ResourceMemory: resource.MustParse(limMem)},
		}
	}
	p := a.pod(t, "rsz", func(p *v1.Pod) {
		main := &p.Spec.Containers[0]
		main.Args = []string{"sleep", "3600"}
		main.Resources = res("100m", "32Mi", "200m", "64Mi")
		restarting := *main.DeepCopy()
		restarting.Name = "restarting"
		restarting.ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
		p.Spec.Containers = append(p.Spec.Containers, restarting)
	})
	p = a.wait(t, p, "Running with resources reported", func(p *v1.Pod) bool {
		s := containerStatus(p, "main")
		return running(p) && s != nil && s.Resources != nil
	})

	patch := `{"spec":{"containers":[{"name":"main","resources":{"limits":{"cpu":"400m","memory":"96Mi"}}},{"name":"restarting","resources":{"limits":{"memory":"80Mi"}}}]}}`
	if out, err := kubectl(t, "", "-n", p.Namespace, "patch", "pod", p.Name, "--subresource", "resize", "--patch", patch); err != nil {
		t.Fatalf("kubectl patch --subresource resize: %v\n%s", err, out)
	}
	want := res("100m", "32Mi", "400m", "96Mi")
	p = a.wait(t, p, "the resize to be actuated", func(p *v1.Pod) bool {
		s, r := containerStatus(p, "main"), containerStatus(p, "restarting")
		return s != nil && s.Resources != nil && apiequality.Semantic.DeepEqual(*s.Resources, want) &&
			apiequality.Semantic.DeepEqual(s.AllocatedResources, want.Requests) &&
			r != nil && r.RestartCount == 1 && r.State.Running != nil &&
			podCondition(p, v1.PodResizePending) == nil && podCondition(p, v1.PodResizeInProgress) == nil
	})
	if s := containerStatus(p, "main"); s.RestartCount != 0 {
		t.Errorf("main restarted %d times; want a resize in place", s.RestartCount)
	}
	for _, tc := range []struct{ name, container, script, want string }{
		{"cpu limit in place", "main", "cat /sys/fs/cgroup/cpu.max 2>/dev/null || cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us", "40000"},
		{"memory limit in place", "main", "cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes", "100663296"},
		{"memory limit after the restart", "restarting", "cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes", "83886080"},
	} {
		pod := p.DeepCopy()
		if tc.container != "main" {
			pod.Spec.Containers = pod.Spec.Containers[1:]
		}
		out, err := a.exec(t, pod, "sh", "-c", tc.script)
		if err != nil || !strings.HasPrefix(out, tc.want) {
			t.Errorf("%s: %s gave %q, %v; want %s", tc.name, tc.script, out, err, tc.want)
		}
	}

	t.Run("deferred while the node cannot fit it", func(t *testing.T) {
		big := `{"spec":{"containers":[{"name":"main","resources":{"requests":{"cpu":"1000"},"limits":{"cpu":"1000"}}}]}}`
		if out, err := kubectl(t, "", "-n", p.Namespace, "patch", "pod", p.Name, "--subresource", "resize", "--patch", big); err != nil {
			t.Fatalf("kubectl patch: %v\n%s", err, out)
		}
		got := a.wait(t, p, "PodResizePending Deferred", func(p *v1.Pod) bool {
			c := podCondition(p, v1.PodResizePending)
			return c != nil && c.Reason == v1.PodReasonDeferred
		})
		if c := podCondition(got, v1.PodResizePending); !strings.HasPrefix(c.Message, "Node didn't have enough resource: cpu, requested: 1000") {
			t.Errorf("PodResizePending message %q; want the admission's", c.Message)
		}
		if s := containerStatus(got, "main"); !apiequality.Semantic.DeepEqual(s.AllocatedResources, want.Requests) {
			t.Errorf("allocatedResources %v while deferred; want the old %v", s.AllocatedResources, want.Requests)
		}
		back := `{"spec":{"containers":[{"name":"main","resources":{"requests":{"cpu":"100m"},"limits":{"cpu":"400m"}}}]}}`
		if out, err := kubectl(t, "", "-n", p.Namespace, "patch", "pod", p.Name, "--subresource", "resize", "--patch", back); err != nil {
			t.Fatalf("kubectl patch: %v\n%s", err, out)
		}
		a.wait(t, p, "PodResizePending gone", func(p *v1.Pod) bool { return podCondition(p, v1.PodResizePending) == nil })
	})

	t.Run("only cpu and memory through resize", func(t *testing.T) {
		out, err := kubectl(t, "", "-n", p.Namespace, "patch", "pod", p.Name, "--subresource", "resize", "--patch", `{"spec":{"containers":[{"name":"main","resources":{"limits":{"ephemeral-storage":"1Gi"}}}]}}`)
		if err == nil || !strings.Contains(out, "only cpu and memory resources are mutable") {
			t.Errorf("ephemeral-storage through resize: %v\n%s\nwant refused: only cpu and memory resources are mutable", err, out)
		}
	})
}

// TestPodLevelResourcesResizeInPlace: a pod with pod-level resources
// (spec.resources) gets its pod cgroup's limits when its sandbox is made,
// and kubectl patch --subresource resize of spec.resources changes them in
// place (the container is not restarted), with the pod-level
// status.resources reporting the new values, as the kubelet 1.37 with
// InPlacePodLevelResourcesVerticalScaling (on by default).
func TestPodLevelResourcesResizeInPlace(t *testing.T) {
	a := startAgent(t, "cri-podlevel-resize", t.TempDir())
	p := a.pod(t, "plr", func(p *v1.Pod) {
		p.Spec.Containers[0].Args = []string{"sleep", "3600"}
		p.Spec.Resources = &v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("200m"), v1.ResourceMemory: resource.MustParse("64Mi")},
		}
	})
	p = a.wait(t, p, "Running with pod-level resources reported", func(p *v1.Pod) bool {
		return running(p) && p.Status.Resources != nil
	})
	// The pod cgroup, read on the host (cgroupfs driver: its QoS tier's).
	podCgroup := func(v1File, v2File string) string {
		t.Helper()
		parent := podCgroupParent(p)
		path := "/sys/fs/cgroup" + parent + "/" + v2File
		if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
			hier, file, _ := strings.Cut(v1File, "/")
			path = "/sys/fs/cgroup/" + hier + parent + "/" + file
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("pod cgroup: %v", err)
		}
		return strings.TrimSpace(string(b))
	}
	check := func(when, quota, mem string) {
		t.Helper()
		if got := podCgroup("cpu/cpu.cfs_quota_us", "cpu.max"); !strings.HasPrefix(got, quota) {
			t.Errorf("%s: pod cgroup cpu quota %q, want %s", when, got, quota)
		}
		if got := podCgroup("memory/memory.limit_in_bytes", "memory.max"); got != mem {
			t.Errorf("%s: pod cgroup memory limit %q, want %s", when, got, mem)
		}
	}
	check("at creation", "20000", "67108864")

	patch := `{"spec":{"resources":{"limits":{"cpu":"400m","memory":"96Mi"}}}}`
	if out, err := kubectl(t, "", "-n", p.Namespace, "patch", "pod", p.Name, "--subresource", "resize", "--patch", patch); err != nil {
		t.Fatalf("kubectl patch --subresource resize: %v\n%s", err, out)
	}
	wantLimits := v1.ResourceList{v1.ResourceCPU: resource.MustParse("400m"), v1.ResourceMemory: resource.MustParse("96Mi")}
	p = a.wait(t, p, "the pod-level resize to be actuated", func(p *v1.Pod) bool {
		return p.Status.Resources != nil && apiequality.Semantic.DeepEqual(p.Status.Resources.Limits, wantLimits) &&
			podCondition(p, v1.PodResizePending) == nil && podCondition(p, v1.PodResizeInProgress) == nil
	})
	if s := containerStatus(p, "main"); s == nil || s.RestartCount != 0 {
		t.Errorf("main: %+v; want it running, not restarted", s)
	}
	check("after the resize", "40000", "100663296")
}
