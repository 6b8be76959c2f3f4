package cri

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite/agent"
	"github.com/kite-project/kite/agent/runtime/cri"
	"github.com/kite-project/kite/agent/runtime/cri/critest"
)

// TestPodCgroupOfEveryPod: the agent sizes the pod cgroup of every pod
// as the kubelet 1.37's ResourceConfigForPod, not only of pods with
// pod-level resources, at sandbox creation and on an in-place resize of a
// container; read on the host (cgroupfs driver: the pod's QoS tier under
// /kite/kubepods, v1 or v2). A Burstable pod with a sidecar (restartable init container) before
// an ordinary init container gets the sidecar summed with the
// containers, and the init container counted beside the sidecar; a
// Guaranteed pod gets its limits, with its RuntimeClass's overhead if
// any; a BestEffort pod the minimum shares.
func TestPodCgroupOfEveryPod(t *testing.T) {
	a := startAgent(t, "cri-podcgroup", t.TempDir())
	rr := func(reqCPU, reqMem, limCPU, limMem string) v1.ResourceRequirements {
		r := v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(reqCPU), v1.ResourceMemory: resource.MustParse(reqMem)}}
		if limCPU != "" {
			r.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse(limCPU), v1.ResourceMemory: resource.MustParse(limMem)}
		}
		return r
	}
	always := v1.ContainerRestartPolicyAlways
	burstable := a.pod(t, "burstable", func(p *v1.Pod) {
		p.Spec.InitContainers = []v1.Container{
			{Name: "sidecar", Image: p.Spec.Containers[0].Image, Args: []string{"sleep", "3600"}, RestartPolicy: &always, Resources: rr("100m", "32Mi", "200m", "64Mi")},
			{Name: "setup", Image: p.Spec.Containers[0].Image, Args: []string{"true"}, Resources: rr("250m", "16Mi", "250m", "16Mi")},
		}
		p.Spec.Containers[0].Args = []string{"sleep", "3600"}
		p.Spec.Containers[0].Resources = rr("200m", "32Mi", "300m", "64Mi")
	})
	guaranteed := a.pod(t, "guaranteed", func(p *v1.Pod) {
		p.Spec.Containers[0].Args = []string{"sleep", "3600"}
		p.Spec.Containers[0].Resources = rr("150m", "48Mi", "150m", "48Mi")
	})
	bestEffort := a.pod(t, "besteffort", func(p *v1.Pod) {
		p.Spec.Containers[0].Args = []string{"sleep", "3600"}
	})
	// A RuntimeClass with a pod overhead (its handler is containerd's
	// default): admission copies the overhead into spec.overhead, which
	// the pod cgroup holds besides the containers.
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "podcgroup-overhead"}, Handler: "runc",
		Overhead: &nodev1.Overhead{PodFixed: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("120Mi")}}}
	if _, err := a.cs.NodeV1().RuntimeClasses().Create(context.Background(), rc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.cs.NodeV1().RuntimeClasses().Delete(context.Background(), rc.Name, metav1.DeleteOptions{}) })
	overhead := a.pod(t, "overhead", func(p *v1.Pod) {
		p.Spec.RuntimeClassName = &rc.Name
		p.Spec.Containers[0].Args = []string{"sleep", "3600"}
		p.Spec.Containers[0].Resources = rr("150m", "48Mi", "150m", "48Mi")
	})
	if overhead.Spec.Overhead.Cpu().MilliValue() != 250 {
		t.Fatalf("spec.overhead %v; want the RuntimeClass's", overhead.Spec.Overhead)
	}
	for _, p := range []*v1.Pod{burstable, guaranteed, bestEffort, overhead} {
		a.wait(t, p, "Running", running)
	}
	if burstable.Status.QOSClass != v1.PodQOSBurstable || guaranteed.Status.QOSClass != v1.PodQOSGuaranteed || bestEffort.Status.QOSClass != v1.PodQOSBestEffort {
		t.Fatalf("classes %s, %s, %s", burstable.Status.QOSClass, guaranteed.Status.QOSClass, bestEffort.Status.QOSClass)
	}

	// Burstable: requests max(200m+100m, 250m+100m) = 350m, 358 shares;
	// limits max(300m+200m, 250m+200m) = 500m and max(64Mi+64Mi,
	// 16Mi+64Mi) = 128Mi.
	checkPodCgroup(t, burstable, "at creation", 358, "50000", 128<<20)
	checkPodCgroup(t, guaranteed, "at creation", 153, "15000", 48<<20)
	checkPodCgroup(t, bestEffort, "at creation", 2, "", 0)
	// 150m+250m, 48Mi+120Mi.
	checkPodCgroup(t, overhead, "at creation", 409, "40000", 168<<20)

	// A resize of the app container: the pod cgroup grows with it
	// (requests 400m+100m = 500m, 512 shares; limits 600m+200m, 96Mi+64Mi).
	patch := `{"spec":{"containers":[{"name":"main","resources":{"requests":{"cpu":"400m","memory":"32Mi"},"limits":{"cpu":"600m","memory":"96Mi"}}}]}}`
	if out, err := kubectl(t, "", "-n", burstable.Namespace, "patch", "pod", burstable.Name, "--subresource", "resize", "--patch", patch); err != nil {
		t.Fatalf("kubectl patch --subresource resize: %v\n%s", err, out)
	}
	wantLimits := v1.ResourceList{v1.ResourceCPU: resource.MustParse("600m"), v1.ResourceMemory: resource.MustParse("96Mi")}
	burstable = a.wait(t, burstable, "the resize actuated", func(p *v1.Pod) bool {
		s := containerStatus(p, "main")
		return s != nil && s.Resources != nil && apiequality.Semantic.DeepEqual(s.Resources.Limits, wantLimits) &&
			podCondition(p, v1.PodResizePending) == nil && podCondition(p, v1.PodResizeInProgress) == nil
	})
	if s := containerStatus(burstable, "main"); s.RestartCount != 0 {
		t.Errorf("main restarted %d times; want it resized in place", s.RestartCount)
	}
	checkPodCgroup(t, burstable, "after growing", 512, "80000", 160<<20)

	// And shrinks with it (requests 100m+100m vs 250m+100m: 350m; limits
	// 200m+200m vs 250m+200m: 450m, 48Mi+64Mi vs 16Mi+64Mi: 112Mi).
	patch = `{"spec":{"containers":[{"name":"main","resources":{"requests":{"cpu":"100m","memory":"32Mi"},"limits":{"cpu":"200m","memory":"48Mi"}}}]}}`
	if out, err := kubectl(t, "", "-n", burstable.Namespace, "patch", "pod", burstable.Name, "--subresource", "resize", "--patch", patch); err != nil {
		t.Fatalf("kubectl patch --subresource resize: %v\n%s", err, out)
	}
	wantLimits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("200m"), v1.ResourceMemory: resource.MustParse("48Mi")}
	burstable = a.wait(t, burstable, "the shrink actuated", func(p *v1.Pod) bool {
		s := containerStatus(p, "main")
		return s != nil && s.Resources != nil && apiequality.Semantic.DeepEqual(s.Resources.Limits, wantLimits) &&
			podCondition(p, v1.PodResizePending) == nil && podCondition(p, v1.PodResizeInProgress) == nil
	})
	checkPodCgroup(t, burstable, "after shrinking", 358, "45000", 112<<20)
}

// checkPodCgroup reads the pod's cgroup on the host and compares it with
// cpu shares (v1; on v2 the kubelet's weight of them), a cpu quota over
// the 100ms period ("" for none) and a memory limit (0 for none).
func checkPodCgroup(t *testing.T, p *v1.Pod, when string, shares int64, quota string, mem int64) {
	t.Helper()
	parent := podCgroupParent(p)
	read := func(v1File, v2File string) string {
		t.Helper()
		path := "/sys/fs/cgroup" + parent + "/" + v2File
		if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
			hier, file, _ := strings.Cut(v1File, "/")
			path = "/sys/fs/cgroup/" + hier + parent + "/" + file
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: pod cgroup of %s: %v", when, p.Name, err)
		}
		return strings.TrimSpace(string(b))
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		if got, want := read("", "cpu.weight"), strconv.FormatUint(weightOf(uint64(shares)), 10); got != want {
			t.Errorf("%s: %s cpu.weight %s, want %s", when, p.Name, got, want)
		}
		wantMax := "max 100000"
		if quota != "" {
			wantMax = quota + " 100000"
		}
		if got := read("", "cpu.max"); got != wantMax {
			t.Errorf("%s: %s cpu.max %q, want %q", when, p.Name, got, wantMax)
		}
		wantMem := "max"
		if mem > 0 {
			wantMem = strconv.FormatInt(mem, 10)
		}
		if got := read("", "memory.max"); got != wantMem {
			t.Errorf("%s: %s memory.max %q, want %q", when, p.Name, got, wantMem)
		}
		return
	}
	if got := read("cpu/cpu.shares", ""); got != strconv.FormatInt(shares, 10) {
		t.Errorf("%s: %s cpu.shares %s, want %d", when, p.Name, got, shares)
	}
	wantQuota := "-1"
	if quota != "" {
		wantQuota = quota
	}
	if got := read("cpu/cpu.cfs_quota_us", ""); got != wantQuota {
		t.Errorf("%s: %s cpu.cfs_quota_us %s, want %s", when, p.Name, got, wantQuota)
	}
	got, err := strconv.ParseInt(read("memory/memory.limit_in_bytes", ""), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	// No limit reads back as the largest page-aligned value.
	if mem > 0 && got != mem || mem == 0 && got < 1<<62 {
		t.Errorf("%s: %s memory.limit_in_bytes %d, want %d (0: none)", when, p.Name, got, mem)
	}
}

// podCgroupParent is the pod's cgroup parent under the cgroupfs driver:
// its QoS class's tier under Kite's /kite/kubepods, as the kubelet's
// layout.
func podCgroupParent(p *v1.Pod) string {
	return cri.PodCgroupParent(cri.CgroupFS, "", string(p.UID), string(p.Status.QOSClass))
}

// readCgroup is a cgroup file on the host: v2 unified (v2File) or v1
// (v1File, "<hierarchy>/<file>"); "" when it cannot be read.
func readCgroup(path, v1File, v2File string) string {
	file := "/sys/fs/cgroup" + path + "/" + v2File
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
		hier, f, _ := strings.Cut(v1File, "/")
		file = "/sys/fs/cgroup/" + hier + path + "/" + f
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// tierShares is what the tier's cpu file should read for shares: v1
// shares, v2 the kubelet's weight of them.
func tierShares(shares int64) string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return strconv.FormatUint(weightOf(uint64(shares)), 10)
	}
	return strconv.FormatInt(shares, 10)
}

// TestPodCgroupQOSTiers: pods' cgroups in the kubelet's QoS layout under
// Kite's root (cgroupfs driver): a Guaranteed pod's under
// /kite/kubepods, a Burstable one's under /kite/kubepods/burstable, a
// BestEffort one's under /kite/kubepods/besteffort, seen so from inside
// the container (/proc/self/cgroup names kubepods, which programs and
// monitoring tools look for); the tiers' cpu shares as the kubelet's
// (BestEffort 2, Burstable the shares of its pods' summed cpu requests),
// following a Burstable pod's deletion; and --pod-max-pids as each pod
// cgroup's pids.max.
func TestPodCgroupQOSTiers(t *testing.T) {
	a := startAgentWith(t, "cri-qostiers", t.TempDir(), func(o *agent.Options) {
		o.ContainerRuntimeEndpoint = critest.Runtime(t).Endpoint()
		o.PodPidsLimit = 97
	})
	sleeper := func(req, lim v1.ResourceList) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.Containers[0].Args = []string{"sleep", "3600"}
			p.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: req, Limits: lim}
			p.Spec.TerminationGracePeriodSeconds = new(int64)
		}
	}
	rl := func(cpu, mem string) v1.ResourceList {
		return v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
	}
	guaranteed := a.pod(t, "guaranteed", sleeper(rl("100m", "32Mi"), rl("100m", "32Mi")))
	burstable := a.pod(t, "burstable", sleeper(rl("300m", "16Mi"), nil))
	other := a.pod(t, "burstable-other", sleeper(rl("250m", "16Mi"), nil))
	bestEffort := a.pod(t, "besteffort", sleeper(nil, nil))
	pods := []*v1.Pod{guaranteed, burstable, other, bestEffort}
	for i, p := range pods {
		pods[i] = a.wait(t, p, "Running", running)
	}
	guaranteed, burstable, other, bestEffort = pods[0], pods[1], pods[2], pods[3]
	for p, want := range map[*v1.Pod]string{
		guaranteed: "/kite/kubepods/pod" + string(guaranteed.UID),
		burstable:  "/kite/kubepods/burstable/pod" + string(burstable.UID),
		other:      "/kite/kubepods/burstable/pod" + string(other.UID),
		bestEffort: "/kite/kubepods/besteffort/pod" + string(bestEffort.UID),
	} {
		if got := podCgroupParent(p); got != want {
			t.Fatalf("%s (%s): parent %s, want %s", p.Name, p.Status.QOSClass, got, want)
		}
		if got := readCgroup(want, "pids/pids.max", "pids.max"); got != "97" {
			t.Errorf("%s: pod cgroup %s pids.max %q, want 97 (--pod-max-pids)", p.Name, want, got)
		}
		// The container's own view: on v1 the host's path; on v2 its
		// cgroup namespace hides the path, as under the kubelet.
		out, err := a.exec(t, p, "cat", "/proc/self/cgroup")
		if err != nil {
			t.Fatalf("%s: cat /proc/self/cgroup: %v\n%s", p.Name, err, out)
		}
		if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil && !strings.Contains(out, want+"/") {
			t.Errorf("%s: /proc/self/cgroup does not name its pod cgroup %s:\n%s", p.Name, want, out)
		}
	}
	// Burstable: 300m + 250m = 550m, 563 shares; BestEffort 2.
	if got, want := readCgroup("/kite/kubepods/burstable", "cpu/cpu.shares", "cpu.weight"), tierShares(563); got != want {
		t.Errorf("burstable tier cpu %q, want %q", got, want)
	}
	if got, want := readCgroup("/kite/kubepods/besteffort", "cpu/cpu.shares", "cpu.weight"), tierShares(2); got != want {
		t.Errorf("besteffort tier cpu %q, want %q", got, want)
	}
	// A Burstable pod goes: the tier keeps the other's 300m, 307 shares,
	// and the pod's cgroup goes with its sandbox.
	if err := a.cs.CoreV1().Pods(other.Namespace).Delete(context.Background(), other.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		got, want := readCgroup("/kite/kubepods/burstable", "cpu/cpu.shares", "cpu.weight"), tierShares(307)
		if got == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("burstable tier cpu %q after a burstable pod went, want %q", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
	otherParent := "/kite/kubepods/burstable/pod" + string(other.UID)
	for {
		dirs, _ := filepath.Glob("/sys/fs/cgroup/*" + otherParent)
		_, v2err := os.Stat("/sys/fs/cgroup" + otherParent)
		if len(dirs) == 0 && v2err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the deleted pod's cgroup is left: %q", dirs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// weightOf is the kubelet's cgroup v2 weight of cpu shares
// (github.com/opencontainers/cgroups ConvertCPUSharesToCgroupV2Value).
func weightOf(shares uint64) uint64 {
	if shares <= 2 {
		return 1
	}
	l := math.Log2(float64(shares))
	return uint64(math.Ceil(math.Pow(10, (l*l+125*l)/612.0-7.0/34.0)))
}

// TestCgroupRootPerAgent: an agent given a cgroup root of its own
// (--cgroup-root=/kite/<unique>, as scripts/conformance gives each joined
// agent) puts its pods' cgroups in the QoS tiers under that root and
// keeps the tiers' cpu shares there (the kubelet's --cgroup-root), and
// leaves the default /kite/kubepods as it was: before, every agent's
// tiers were /kite/kubepods's, and agents sharing a host overwrote each
// other's shares. (One agent: agents over one containerd would stop each
// other's pods, which no source of theirs has.)
func TestCgroupRootPerAgent(t *testing.T) {
	root := "/kite/cgroot-" + strconv.Itoa(os.Getpid())
	// Registered before the agent, so run after it stops: the tiers and
	// the root the test made go (the pod's own went with its sandbox,
	// below; the package's runtime, which removes the sandboxes left at
	// the end, knows only the default root).
	t.Cleanup(func() {
		if left := removeCgroupTree(root); len(left) > 0 {
			t.Errorf("cgroups left under %s: %q", root, left)
		}
	})
	defaultTier := readCgroup("/kite/kubepods/burstable", "cpu/cpu.shares", "cpu.weight")
	a := startAgentWith(t, "cri-cgroot", t.TempDir(), func(o *agent.Options) {
		o.ContainerRuntimeEndpoint = critest.Runtime(t).Endpoint()
		o.CgroupRoot = root
	})
	// 333m: 340 shares, a value no other test's tier has.
	p := a.pod(t, "burstable", func(p *v1.Pod) {
		p.Spec.Containers[0].Args = []string{"sleep", "3600"}
		p.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("333m")}}
		p.Spec.TerminationGracePeriodSeconds = new(int64)
	})
	p = a.wait(t, p, "Running", running)
	if p.Status.QOSClass != v1.PodQOSBurstable {
		t.Fatalf("class %s, want Burstable", p.Status.QOSClass)
	}
	want := root + "/kubepods/burstable/pod" + string(p.UID)
	if got := cri.PodCgroupParent(cri.CgroupFS, root, string(p.UID), "Burstable"); got != want {
		t.Fatalf("cri.PodCgroupParent under %s = %s, want %s", root, got, want)
	}
	if readCgroup(want, "cpu/cpu.shares", "cpu.weight") == "" {
		t.Errorf("no pod cgroup %s on the host", want)
	}
	if def := "/kite/kubepods/burstable/pod" + string(p.UID); readCgroup(def, "cpu/cpu.shares", "cpu.weight") != "" {
		t.Errorf("pod cgroup under the default root, %s", def)
	}
	// The container's own view names the root (v1; v2's cgroup namespace
	// hides the path).
	out, err := a.exec(t, p, "cat", "/proc/self/cgroup")
	if err != nil {
		t.Fatalf("cat /proc/self/cgroup: %v\n%s", err, out)
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil && !strings.Contains(out, want+"/") {
		t.Errorf("/proc/self/cgroup does not name the pod cgroup %s:\n%s", want, out)
	}
	waitCgroup(t, root+"/kubepods/burstable", "cpu/cpu.shares", "cpu.weight", tierShares(340))
	waitCgroup(t, root+"/kubepods/besteffort", "cpu/cpu.shares", "cpu.weight", tierShares(2))
	if got := readCgroup("/kite/kubepods/burstable", "cpu/cpu.shares", "cpu.weight"); got != defaultTier {
		t.Errorf("the default root's burstable tier cpu %q, was %q before: the agent with a root of its own wrote it", got, defaultTier)
	}
	// The pod's deletion: its cgroup goes from the root, and the tier
	// falls to the minimum.
	if err := a.cs.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCgroup(t, root+"/kubepods/burstable", "cpu/cpu.shares", "cpu.weight", tierShares(2))
	waitCgroup(t, want, "cpu/cpu.shares", "cpu.weight", "")
	if got := readCgroup("/kite/kubepods/burstable", "cpu/cpu.shares", "cpu.weight"); got != defaultTier {
		t.Errorf("the default root's burstable tier cpu %q after the pod went, was %q before", got, defaultTier)
	}
}

// waitCgroup waits (60 s at most) until a cgroup file reads want (""
// once it is gone).
func waitCgroup(t *testing.T, path, v1File, v2File, want string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := readCgroup(path, v1File, v2File)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cgroup %s: %s %q, want %q", path, v1File, got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// removeCgroupTree removes a cgroupfs path and what is below it, deepest
// first, in every v1 hierarchy and the unified one; a cgroup still in use
// is left, and returned.
func removeCgroupTree(path string) (left []string) {
	dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", path))
	for _, top := range append(dirs, filepath.Join("/sys/fs/cgroup", path)) {
		var tree []string
		filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				tree = append(tree, p)
			}
			return nil
		})
		for i := len(tree) - 1; i >= 0; i-- {
			if err := os.Remove(tree[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
				left = append(left, tree[i])
			}
		}
	}
	return left
}
