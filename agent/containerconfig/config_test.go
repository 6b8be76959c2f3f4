package containerconfig

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/agent/runtime"
)

// setup makes namespace ns with a configMap "cm" {a: 1, b: two} and a
// secret "s" {token: sekret}, and a Builder reading them.
func setup(t *testing.T, ns string) *Builder {
	t.Helper()
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(shared.RESTConfig())
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"a": "1", "b": "two"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Data: map[string][]byte{"token": []byte("sekret")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b, err := New(Options{RootDir: t.TempDir(), Client: cs.CoreV1(), NodeName: "node1", HostIPs: []string{"10.1.2.3", "fd00::3"},
		Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi")}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testPod(ns string, c v1.Container) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, UID: "uid-1", Labels: map[string]string{"app": "web", "tier": "front"}, Annotations: map[string]string{"note": "hi"}},
		Spec:       v1.PodSpec{NodeName: "node1", ServiceAccountName: "default", Containers: []v1.Container{c}},
	}
}

func optional() *bool { t := true; return &t }

func TestEnv(t *testing.T) {
	b := setup(t, "env")
	field := func(p string) *v1.EnvVarSource {
		return &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: p}}
	}
	c := v1.Container{Name: "c", Command: []string{"sh"},
		Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}, Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")}},
		EnvFrom: []v1.EnvFromSource{
			{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}, Prefix: "CM_"},
			{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "missing"}, Optional: optional()}},
		},
		Env: []v1.EnvVar{
			{Name: "LIT", Value: "x"},
			{Name: "EXP", Value: "$(LIT)-$(CM_b)-$(NOPE)-$$(LIT)"},
			{Name: "NAME", ValueFrom: field("metadata.name")},
			{Name: "NS", ValueFrom: field("metadata.namespace")},
			{Name: "UID", ValueFrom: field("metadata.uid")},
			{Name: "APP", ValueFrom: field("metadata.labels['app']")},
			{Name: "NOTE", ValueFrom: field("metadata.annotations['note']")},
			{Name: "NODE", ValueFrom: field("spec.nodeName")},
			{Name: "SA", ValueFrom: field("spec.serviceAccountName")},
			{Name: "PODIP", ValueFrom: field("status.podIP")},
			{Name: "HOSTIPS", ValueFrom: field("status.hostIPs")},
			{Name: "MEM", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
			{Name: "CPULIM", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}},
			{Name: "CPUREQ", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1m")}}},
			{Name: "A", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Key: "a"}}},
			{Name: "OPT", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Key: "zz", Optional: optional()}}},
			{Name: "TOKEN", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "s"}, Key: "token"}}},
			{Name: "CM_a", Value: "overridden"},
		},
	}
	got, err := b.Env(context.Background(), testPod("env", c), &c)
	if err != nil {
		t.Fatal(err)
	}
	want := []EnvVar{
		{"CM_a", "overridden"}, {"CM_b", "two"}, {"LIT", "x"}, {"EXP", "x-two-$(NOPE)-$(LIT)"},
		{"NAME", "web"}, {"NS", "env"}, {"UID", "uid-1"}, {"APP", "web"}, {"NOTE", "hi"}, {"NODE", "node1"}, {"SA", "default"},
		{"PODIP", "10.1.2.3"}, {"HOSTIPS", "10.1.2.3,fd00::3"}, {"MEM", "64"}, {"CPULIM", "4"}, {"CPUREQ", "250"}, {"A", "1"}, {"TOKEN", "sekret"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("env (-want +got):\n%s", d)
	}
}

func TestEnvErrors(t *testing.T) {
	b := setup(t, "enverr")
	ref := func(src *v1.EnvVarSource) v1.Container {
		return v1.Container{Name: "c", Command: []string{"sh"}, Env: []v1.EnvVar{{Name: "X", ValueFrom: src}}}
	}
	cases := []struct {
		name string
		c    v1.Container
		want string
	}{
		{"missing configMap key", ref(&v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Key: "K"}}),
			"couldn't find key K in ConfigMap enverr/cm"},
		{"missing secret key", ref(&v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "s"}, Key: "K"}}),
			"couldn't find key K in Secret enverr/s"},
		{"missing configMap", ref(&v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}, Key: "K"}}),
			`configmaps "nope" not found`},
		{"whole labels in env", ref(&v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}}),
			"unsupported fieldPath: metadata.labels"},
		{"missing envFrom secret", v1.Container{Name: "c", EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}}}}},
			`secrets "nope" not found`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.Env(context.Background(), testPod("enverr", tc.c), &tc.c)
			if err == nil || err.Error() != tc.want {
				t.Errorf("Env error = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	vars := mappingFor(map[string]string{"A": "1", "B": "$(A)"})
	for in, want := range map[string]string{
		"$(A)":      "1",
		"$(A)$(A)":  "11",
		"$$(A)":     "$(A)",
		"$(C)":      "$(C)",
		"$(A":       "$(A",
		"$A":        "$A",
		"a$":        "a$",
		"$(B)":      "$(A)", // no recursion
		"x $$ y":    "x $ y",
		"":          "",
		"$()":       "$()",
		"pre$(A)po": "pre1po",
	} {
		if got := Expand(in, vars); got != want {
			t.Errorf("Expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestContainerConfig(t *testing.T) {
	b := setup(t, "cfg")
	mode := int32(0o600)
	c := v1.Container{Name: "app", Image: "busybox", Command: []string{"sh", "-c"}, Args: []string{"echo $(GREETING)"}, WorkingDir: "/tmp",
		Env:          []v1.EnvVar{{Name: "GREETING", Value: "hello"}},
		Resources:    v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("128Mi")}},
		VolumeMounts: []v1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg", ReadOnly: true}, {Name: "scratch", MountPath: "/scratch"}, {Name: "info", MountPath: "/etc/info"}, {Name: "all", MountPath: "/etc/all"}},
	}
	pod := testPod("cfg", c)
	pod.Spec.Volumes = []v1.Volume{
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Items: []v1.KeyToPath{{Key: "b", Path: "sub/b.txt", Mode: &mode}}}}},
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
		{Name: "all", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "s"}}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Optional: optional()}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Items: []v1.KeyToPath{{Key: "a", Path: "a"}}}}}}}},
	}
	ctx := context.Background()
	vols, err := b.Volumes(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	podDir := filepath.Join(b.rootDir, "pods", "uid-1", "volumes")
	for path, want := range map[string]string{
		"kubernetes.io~configmap/cfg/sub/b.txt":  "two",
		"kubernetes.io~downward-api/info/labels": "app=\"web\"\ntier=\"front\"",
		"kubernetes.io~downward-api/info/name":   "web",
		"kubernetes.io~projected/all/token":      "sekret",
		"kubernetes.io~projected/all/a":          "1",
	} {
		got, err := os.ReadFile(filepath.Join(podDir, path))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", path, got, err, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(podDir, "kubernetes.io~configmap/cfg/sub/b.txt")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("item mode = %v, %v; want 0600", fi.Mode(), err)
	}
	if _, err := os.Stat(filepath.Join(podDir, "kubernetes.io~configmap/cfg/a")); !os.IsNotExist(err) {
		t.Errorf("key a not in items was written: %v", err)
	}

	cfg, err := b.ContainerConfig(ctx, pod, &pod.Spec.Containers[0], 2, vols)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Args; len(got) != 1 || got[0] != "echo hello" {
		t.Errorf("args = %q, want expanded [echo hello]", got)
	}
	if cfg.LogPath != "app/2.log" || cfg.WorkingDir != "/tmp" || cfg.Metadata.Attempt != 2 {
		t.Errorf("logPath %q workingDir %q attempt %d", cfg.LogPath, cfg.WorkingDir, cfg.Metadata.Attempt)
	}
	if m := cfg.Mounts[0]; m.ContainerPath != "/etc/cfg" || m.HostPath != filepath.Join(podDir, "kubernetes.io~configmap/cfg") || !m.Readonly {
		t.Errorf("mount = %+v", m)
	}
	if cfg.Labels[runtime.LabelPodUID] != "uid-1" || cfg.Labels[runtime.LabelContainerName] != "app" || cfg.Annotations[runtime.AnnotationRestartCount] != "2" || cfg.Annotations[runtime.AnnotationContainerHash] == "" {
		t.Errorf("labels %v annotations %v", cfg.Labels, cfg.Annotations)
	}
	r := cfg.Linux.Resources
	if r.MemoryLimitInBytes != 128<<20 || r.CpuQuota != 50000 || r.CpuPeriod != 100000 || r.CpuShares != 512 || r.OomScoreAdj != -997 {
		t.Errorf("resources = %+v", r)
	}
	sb := b.SandboxConfig(pod, 0)
	if want := filepath.Join(b.rootDir, "pods", "cfg_web_uid-1"); sb.LogDirectory != want || sb.Metadata.Uid != "uid-1" {
		t.Errorf("sandbox logDirectory %q (want %q), metadata %+v", sb.LogDirectory, want, sb.Metadata)
	}
}

func TestVolumeErrors(t *testing.T) {
	b := setup(t, "volerr")
	cases := []struct {
		name string
		vol  v1.VolumeSource
		want string
	}{
		{"missing configMap", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}}},
			`MountVolume.SetUp failed for volume "v" : configmaps "nope" not found`},
		{"missing item key", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Items: []v1.KeyToPath{{Key: "zz", Path: "z"}}}},
			`MountVolume.SetUp failed for volume "v" : configmap references non-existent config key: zz`},
		{"missing secret key", v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s", Items: []v1.KeyToPath{{Key: "zz", Path: "z"}}}},
			`MountVolume.SetUp failed for volume "v" : references non-existent secret key: zz`},
		{"unsupported", v1.VolumeSource{NFS: &v1.NFSVolumeSource{Server: "x", Path: "/"}}, "unsupported volume type"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod("volerr", v1.Container{Name: "c"})
			pod.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: tc.vol}}
			_, err := b.Volumes(context.Background(), pod)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Volumes error = %v, want %q", err, tc.want)
			}
		})
	}
	// An optional missing configMap is an empty volume.
	pod := testPod("volerr", v1.Container{Name: "c"})
	pod.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}, Optional: optional()}}}}
	if _, err := b.Volumes(context.Background(), pod); err != nil {
		t.Errorf("optional missing configMap: %v", err)
	}
}

func TestNoCommand(t *testing.T) {
	b := setup(t, "nocmd")
	c := v1.Container{Name: "c", Image: "nginx"}
	_, err := b.ContainerConfig(context.Background(), testPod("nocmd", c), &c, 0, nil)
	if !errors.Is(err, ErrNoCommand) || !strings.Contains(err.Error(), `"nginx"`) {
		t.Errorf("error = %v, want ErrNoCommand naming the image", err)
	}
}

// TestVolumeUpdateIsAtomic: rewriting a configMap volume switches ..data
// and drops a key the new content no longer has.
func TestVolumeUpdateIsAtomic(t *testing.T) {
	dir := t.TempDir()
	if err := writeAtomic(dir, map[string]file{"a": {[]byte("1"), 0o644}, "b": {[]byte("2"), 0o644}}); err != nil {
		t.Fatal(err)
	}
	if err := writeAtomic(dir, map[string]file{"a": {[]byte("3"), 0o644}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a")); string(got) != "3" {
		t.Errorf("a = %q, want 3", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "b")); !os.IsNotExist(err) {
		t.Errorf("b still there: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 { // a, ..data, one timestamped directory
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("entries = %v, want a, ..data and one data directory", names)
	}
}

func TestSecurityContext(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	yes := true
	cases := []struct {
		name      string
		pod       *v1.PodSecurityContext
		container *v1.SecurityContext
		wantUser  *int64
		wantGroup *int64
		groups    []int64
		err       string
	}{
		{name: "none"},
		{name: "pod user and groups, fsGroup appended", pod: &v1.PodSecurityContext{RunAsUser: i(1000), RunAsGroup: i(100), SupplementalGroups: []int64{5}, FSGroup: i(7)},
			wantUser: i(1000), wantGroup: i(100), groups: []int64{5, 7}},
		{name: "container overrides pod", pod: &v1.PodSecurityContext{RunAsUser: i(1000)}, container: &v1.SecurityContext{RunAsUser: i(2000)}, wantUser: i(2000)},
		{name: "runAsNonRoot without a user", pod: &v1.PodSecurityContext{RunAsNonRoot: &yes},
			err: `container has runAsNonRoot and image will run as root (pod: "web_sec(uid-1)", container: c)`},
		{name: "runAsNonRoot with user 0", container: &v1.SecurityContext{RunAsNonRoot: &yes, RunAsUser: i(0)},
			err: `container's runAsUser breaks non-root policy (pod: "web_sec(uid-1)", container: c)`},
		{name: "runAsNonRoot with user 1000", container: &v1.SecurityContext{RunAsNonRoot: &yes, RunAsUser: i(1000)}, wantUser: i(1000)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := v1.Container{Name: "c", SecurityContext: tc.container}
			pod := testPod("sec", c)
			pod.Spec.SecurityContext = tc.pod
			sc, err := securityContext(pod, &c)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (sc.RunAsUser == nil) != (tc.wantUser == nil) || sc.RunAsUser != nil && sc.RunAsUser.Value != *tc.wantUser {
				t.Errorf("runAsUser = %v, want %v", sc.RunAsUser, tc.wantUser)
			}
			if (sc.RunAsGroup == nil) != (tc.wantGroup == nil) || sc.RunAsGroup != nil && sc.RunAsGroup.Value != *tc.wantGroup {
				t.Errorf("runAsGroup = %v, want %v", sc.RunAsGroup, tc.wantGroup)
			}
			if d := cmp.Diff(tc.groups, sc.SupplementalGroups); d != "" {
				t.Errorf("supplementalGroups (-want +got):\n%s", d)
			}
		})
	}
}

func TestPodResources(t *testing.T) {
	rl := func(cpu, mem string) v1.ResourceList {
		l := v1.ResourceList{}
		if cpu != "" {
			l[v1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[v1.ResourceMemory] = resource.MustParse(mem)
		}
		return l
	}
	cases := []struct {
		name       string
		containers []v1.ResourceRequirements
		inits      []v1.ResourceRequirements
		quota, mem int64
		shares     int64
	}{
		{"no limits: unbounded", []v1.ResourceRequirements{{}}, nil, 0, 0, 2},
		{"all limited: the sum", []v1.ResourceRequirements{{Limits: rl("500m", "64Mi"), Requests: rl("250m", "")}, {Limits: rl("1", "64Mi")}}, nil, 150000, 128 << 20, 256},
		{"one unlimited memory: no memory limit", []v1.ResourceRequirements{{Limits: rl("500m", "64Mi")}, {Limits: rl("500m", "")}}, nil, 100000, 0, 2},
		{"a bigger init container wins", []v1.ResourceRequirements{{Limits: rl("500m", "64Mi")}}, []v1.ResourceRequirements{{Limits: rl("2", "1Gi")}}, 200000, 1 << 30, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1.Pod{}
			for _, r := range tc.containers {
				p.Spec.Containers = append(p.Spec.Containers, v1.Container{Resources: r})
			}
			for _, r := range tc.inits {
				p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Resources: r})
			}
			r := podResources(p)
			if r.CpuQuota != tc.quota || r.MemoryLimitInBytes != tc.mem || r.CpuShares != tc.shares {
				t.Errorf("quota %d memory %d shares %d; want %d %d %d", r.CpuQuota, r.MemoryLimitInBytes, r.CpuShares, tc.quota, tc.mem, tc.shares)
			}
		})
	}
}
