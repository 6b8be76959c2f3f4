package agent

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/agent/runtime/process"
)

// startPodAgent runs an Agent that runs its pods (the pod manager over
// the process runtime, without cgroups) until the test ends, and then
// stops every container it started: an agent that stops leaves its pods
// running.
func startPodAgent(t *testing.T, opts Options) {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("needs sh")
	}
	if opts.RootDir == "" {
		opts.RootDir = t.TempDir()
	}
	rt, err := process.New(process.Options{RootDir: filepath.Join(opts.RootDir, "runtime"), NoCgroups: true})
	if err != nil {
		t.Fatal(err)
	}
	opts.Runtime, opts.ServerAddress = rt, "127.0.0.1"
	if opts.MirrorRetryInitial == 0 {
		opts.MirrorRetryInitial, opts.MirrorRetryMax = 50*time.Millisecond, 500*time.Millisecond
	}
	a, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	_, logCtx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(logCtx)
	var wg sync.WaitGroup
	wg.Go(func() { a.Run(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		bg := context.Background()
		list, _ := rt.ListPodSandbox(bg, nil)
		for _, s := range list {
			rt.StopPodSandbox(bg, s.Id)
			rt.RemovePodSandbox(bg, s.Id)
		}
	})
}

// staticManifest is a static pod manifest running script with sh -c.
func staticManifest(name, script string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - name: main\n    image: busybox\n    command: [sh, -c, %q]\n", name, script)
}

// runningWithContainer says whether p is Running with its one container
// running and ready.
func runningWithContainer(p *v1.Pod) bool {
	if p == nil || p.Status.Phase != v1.PodRunning || len(p.Status.ContainerStatuses) != 1 {
		return false
	}
	c := p.Status.ContainerStatuses[0]
	return c.Ready && c.State.Running != nil
}

// TestRecreatedMirrorPodGetsTheStaticPodsStatus is the mirror-recreate
// story end to end: kubectl delete pod on a running static pod's mirror
// (default grace, then grace 0); the agent creates the mirror again and
// the new mirror shows the static pod Running with its container, though
// the static pod itself never changed.
func TestRecreatedMirrorPodGetsTheStaticPodsStatus(t *testing.T) {
	node := unique("mirror-status-node")
	cfg := shared.RESTConfig()
	cs := clientset(t, cfg)
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "web.yaml"), staticManifest("web", "exec sleep 600"))
	startPodAgent(t, Options{NodeName: node, RESTConfig: cfg, StaticPodPath: dir})
	name := "web-" + node
	m := waitAPIPod(t, cs, "default", name, "the mirror Running", func(p *v1.Pod) bool {
		return p != nil && kubetypes.IsMirrorPod(p) && runningWithContainer(p)
	})
	for _, grace := range []*int64{nil, new(int64)} {
		if err := cs.CoreV1().Pods("default").Delete(t.Context(), name, metav1.DeleteOptions{GracePeriodSeconds: grace}); err != nil {
			t.Fatal(err)
		}
		old := m.UID
		m = waitAPIPod(t, cs, "default", name, "the recreated mirror Running", func(p *v1.Pod) bool {
			return p != nil && p.UID != old && p.DeletionTimestamp == nil && kubetypes.IsMirrorPod(p) && runningWithContainer(p)
		})
	}
}
