package cri

import (
	"context"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodCgroupOfEveryPod: the agent sizes the pod cgroup of every pod
// as the kubelet 1.37's ResourceConfigForPod, not only of pods with
// pod-level resources, at sandbox creation and on an in-place resize of a
// container; read on the host (cgroupfs driver: /kite/pod<uid>, v1 or
// v2). A Burstable pod with a sidecar (restartable init container) before
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
	parent := "/kite/pod" + string(p.UID)
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

// weightOf is the kubelet's cgroup v2 weight of cpu shares
// (github.com/opencontainers/cgroups ConvertCPUSharesToCgroupV2Value).
func weightOf(shares uint64) uint64 {
	if shares <= 2 {
		return 1
	}
	l := math.Log2(float64(shares))
	return uint64(math.Ceil(math.Pow(10, (l*l+125*l)/612.0-7.0/34.0)))
}
