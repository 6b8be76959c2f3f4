package cri

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kite-project/kite/agent/runtime/cri/critest"
)

// TestVolumesSecurityAndLimitsReachTheContainer: what the agent's
// configuration asks of the runtime is what the container gets: an
// emptyDir mounted read-write, read-only and by subPath (one directory
// seen three ways), a read-only root file system, every capability
// dropped, the env and working directory, and its memory limit in its
// cgroup.
func TestVolumesSecurityAndLimitsReachTheContainer(t *testing.T) {
	a := startAgent(t, "cri-config", t.TempDir())
	no, yes := false, true
	p := a.pod(t, "cfg", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
		c := &p.Spec.Containers[0]
		c.Image = critest.BusyBox
		c.Command = []string{"sh", "-c"}
		c.Args = []string{"mkdir -p /data/sub && echo in-sub > /data/sub/f && exec sleep 3600"}
		c.Env = []v1.EnvVar{{Name: "GREETING", Value: "hi"}, {Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
		c.WorkingDir = "/data"
		c.VolumeMounts = []v1.VolumeMount{
			{Name: "scratch", MountPath: "/data"},
			{Name: "scratch", MountPath: "/ro", ReadOnly: true},
			{Name: "scratch", MountPath: "/sub", SubPath: "sub"},
		}
		c.SecurityContext = &v1.SecurityContext{ReadOnlyRootFilesystem: &yes, AllowPrivilegeEscalation: &no,
			Capabilities: &v1.Capabilities{Drop: []v1.Capability{"ALL"}}}
		c.Resources = v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}}
	})
	p = a.wait(t, p, "Running", running)
	cases := []struct{ name, script, want string }{
		{"env and working dir", `echo "$GREETING $POD $(pwd)"`, "hi cfg /data\n"},
		{"subPath shows the sub-directory", "cat /sub/f", "in-sub\n"},
		{"read-only mount", "touch /ro/x 2>/dev/null && echo wrote || echo refused", "refused\n"},
		{"read-only root", "touch /x 2>/dev/null && echo wrote || echo refused", "refused\n"},
		{"capabilities dropped", "grep CapEff /proc/self/status", "CapEff:\t0000000000000000\n"},
		{"memory limit", "cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max", "67108864\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := a.exec(t, p, "sh", "-c", tc.script)
			if err != nil || out != tc.want {
				t.Errorf("%s: %q, %v; want %q", tc.script, out, err, strings.TrimSpace(tc.want))
			}
		})
	}
}
