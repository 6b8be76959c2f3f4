package podruntime

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/runtime"
)

// TestHashCoversNameAndImageOnly: the hash changes with the name or the
// image and with nothing else, as upstream's HashContainer.
func TestHashCoversNameAndImageOnly(t *testing.T) {
	base := v1.Container{Name: "c", Image: "busybox:1", Command: []string{"sh"}}
	h := HashContainer(&base)
	other := base
	other.Command, other.Env = []string{"bash"}, []v1.EnvVar{{Name: "X", Value: "1"}}
	if HashContainer(&other) != h {
		t.Error("hash changed with the command and env")
	}
	for _, c := range []v1.Container{{Name: "d", Image: "busybox:1"}, {Name: "c", Image: "busybox:2"}} {
		if HashContainer(&c) == h {
			t.Errorf("hash of %s/%s equals that of c/busybox:1", c.Name, c.Image)
		}
	}
}

func TestFromCRI(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ann := func(restarts, hash string) map[string]string {
		return map[string]string{runtime.AnnotationRestartCount: restarts, runtime.AnnotationContainerHash: hash}
	}
	p := FromCRI("u", "p", "ns",
		[]*runtimeapi.PodSandbox{
			{Id: "old", State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY, CreatedAt: t0.UnixNano(), Metadata: &runtimeapi.PodSandboxMetadata{Attempt: 0}},
			{Id: "new", State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: t0.Add(time.Minute).UnixNano(), Metadata: &runtimeapi.PodSandboxMetadata{Attempt: 1}},
		},
		[]*runtimeapi.ContainerStatus{
			{Id: "a0", State: runtimeapi.ContainerState_CONTAINER_EXITED, ExitCode: 1, CreatedAt: t0.UnixNano(), FinishedAt: t0.Add(time.Second).UnixNano(),
				Labels: map[string]string{runtime.LabelContainerName: "a"}, Annotations: ann("0", "h"), Reason: "Error"},
			{Id: "a1", State: runtimeapi.ContainerState_CONTAINER_RUNNING, CreatedAt: t0.Add(time.Minute).UnixNano(), StartedAt: t0.Add(time.Minute).UnixNano(),
				Labels: map[string]string{runtime.LabelContainerName: "a"}, Annotations: ann("1", "h"), Image: &runtimeapi.ImageSpec{Image: "busybox"}},
		})
	if p.Sandboxes[0].ID != "new" || !p.Sandboxes[0].Ready || p.Sandboxes[0].Attempt != 1 {
		t.Errorf("newest sandbox = %+v", p.Sandboxes[0])
	}
	c := p.Find("a")
	if c.ID != "a1" || c.State != Running || c.RestartCount != 1 || c.Hash != "h" || c.Image != "busybox" || !c.StartedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("newest a = %+v", c)
	}
	if all := p.Instances("a"); len(all) != 2 || all[1].ID != "a0" || all[1].State != Exited || all[1].ExitCode != 1 || all[1].Reason != "Error" {
		t.Errorf("instances = %+v", all)
	}
	if r := p.Running(); len(r) != 1 || r[0].ID != "a1" {
		t.Errorf("running = %+v", r)
	}
	if p.Find("b") != nil {
		t.Error("found a container that is not there")
	}
}
