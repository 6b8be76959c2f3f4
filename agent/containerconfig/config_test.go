package containerconfig

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/podruntime"
	"github.com/kite-project/kite/agent/runtime"
)

// inputs are the Inputs of a node node1 (10.1.2.3, fd00::3; 4 CPUs,
// 8Gi) whose pod's namespace has a configMap "cm" {a: 1, b: two} and a
// secret "s" {token: sekret}, and nothing else.
func inputs() Inputs {
	return Inputs{NodeName: "node1", HostIPs: []string{"10.1.2.3", "fd00::3"},
		Allocatable:  v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi")},
		LogDirectory: "/logs/cfg_web_uid-1",
		ConfigMaps:   map[string]Lookup[*v1.ConfigMap]{"cm": {Object: &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"a": "1", "b": "two"}}}},
		Secrets:      map[string]Lookup[*v1.Secret]{"s": {Object: &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Data: map[string][]byte{"token": []byte("sekret")}}}},
	}
}

func testPod(ns string, c v1.Container) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, UID: "uid-1", Labels: map[string]string{"app": "web", "tier": "front"}, Annotations: map[string]string{"note": "hi"}},
		Spec:       v1.PodSpec{NodeName: "node1", ServiceAccountName: "default", Containers: []v1.Container{c}},
	}
}

func optional() *bool { t := true; return &t }

func TestEnv(t *testing.T) {
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
	got, err := Env(testPod("env", c), &c, inputs())
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
		{"a configMap that could not be read", ref(&v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "broken"}, Key: "K", Optional: optional()}}),
			"failed to sync configmaps cache"},
		{"missing secret key", ref(&v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "s"}, Key: "K"}}),
			"couldn't find key K in Secret enverr/s"},
		{"missing configMap", ref(&v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}, Key: "K"}}),
			`configmaps "nope" not found`},
		{"whole labels in env", ref(&v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}}),
			"unsupported fieldPath: metadata.labels"},
		{"missing envFrom secret", v1.Container{Name: "c", EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}}}}},
			`secrets "nope" not found`},
	}
	in := inputs()
	in.ConfigMaps["broken"] = Lookup[*v1.ConfigMap]{Err: errors.New("failed to sync configmaps cache")}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Env(testPod("enverr", tc.c), &tc.c, in)
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

// volumesPod is a pod of namespace cfg with a configMap item (mode 0600),
// an emptyDir, a downwardAPI volume and a projected one.
func volumesPod() *v1.Pod {
	mode := int32(0o600)
	c := v1.Container{Name: "app", Image: "busybox", Command: []string{"sh", "-c"}, Args: []string{"echo $(GREETING)"}, WorkingDir: "/tmp",
		Env: []v1.EnvVar{{Name: "GREETING", Value: "hello"}},
		// Requests defaulted from the limits, as the API returns them.
		Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("128Mi")},
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("128Mi")}},
		VolumeMounts: []v1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg", ReadOnly: true}, {Name: "scratch", MountPath: "/scratch"}, {Name: "info", MountPath: "/etc/info"}, {Name: "all", MountPath: "/etc/all", SubPath: "sub"}},
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
	return pod
}

func TestFiles(t *testing.T) {
	pod := volumesPod()
	want := map[string]map[string]File{
		"cfg":     {"sub/b.txt": {[]byte("two"), 0o600}},
		"scratch": nil,
		"info":    {"labels": {[]byte("app=\"web\"\ntier=\"front\""), 0o644}, "name": {[]byte("web"), 0o644}},
		"all":     {"token": {[]byte("sekret"), 0o644}, "a": {[]byte("1"), 0o644}},
	}
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		t.Run(vol.Name, func(t *testing.T) {
			got, err := Files(pod, vol, inputs())
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want[vol.Name], got); d != "" {
				t.Errorf("files (-want +got):\n%s", d)
			}
		})
	}
}

func TestFilesErrors(t *testing.T) {
	cases := []struct {
		name string
		vol  v1.VolumeSource
		want string
	}{
		{"missing configMap", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}}},
			`configmaps "nope" not found`},
		{"missing item key", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Items: []v1.KeyToPath{{Key: "zz", Path: "z"}}}},
			`configmap references non-existent config key: zz`},
		{"missing secret key", v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s", Items: []v1.KeyToPath{{Key: "zz", Path: "z"}}}},
			`references non-existent secret key: zz`},
		{"optional missing configMap is empty", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}, Optional: optional()}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod("volerr", v1.Container{Name: "c"})
			vol := v1.Volume{Name: "v", VolumeSource: tc.vol}
			files, err := Files(pod, &vol, inputs())
			if tc.want == "" {
				if err != nil || len(files) != 0 {
					t.Errorf("Files = %v, %v; want none", files, err)
				}
				return
			}
			if err == nil || err.Error() != tc.want {
				t.Errorf("Files error = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestBuild(t *testing.T) {
	pod := volumesPod()
	in := inputs()
	in.RestartCount = 2
	in.Volumes = map[string]string{"cfg": "/v/cfg", "scratch": "/v/scratch", "info": "/v/info", "all": "/v/all"}
	cfg, err := Build(pod, &pod.Spec.Containers[0], in)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Args; len(got) != 1 || got[0] != "echo hello" {
		t.Errorf("args = %q, want expanded [echo hello]", got)
	}
	if cfg.LogPath != "app/2.log" || cfg.WorkingDir != "/tmp" || cfg.Metadata.Attempt != 2 {
		t.Errorf("logPath %q workingDir %q attempt %d", cfg.LogPath, cfg.WorkingDir, cfg.Metadata.Attempt)
	}
	if m := cfg.Mounts[0]; m.ContainerPath != "/etc/cfg" || m.HostPath != "/v/cfg" || !m.Readonly {
		t.Errorf("mount = %+v", m)
	}
	if m := cfg.Mounts[3]; m.ContainerPath != "/etc/all" || m.HostPath != "/v/all/sub" {
		t.Errorf("subPath mount = %+v", m)
	}
	if cfg.Labels[runtime.LabelPodUID] != "uid-1" || cfg.Labels[runtime.LabelContainerName] != "app" || cfg.Annotations[runtime.AnnotationRestartCount] != "2" || cfg.Annotations[runtime.AnnotationContainerHash] == "" {
		t.Errorf("labels %v annotations %v", cfg.Labels, cfg.Annotations)
	}
	r := cfg.Linux.Resources
	if r.MemoryLimitInBytes != 128<<20 || r.CpuQuota != 50000 || r.CpuPeriod != 100000 || r.CpuShares != 512 || r.OomScoreAdj != -997 {
		t.Errorf("resources = %+v", r)
	}
	sb := SandboxConfig(pod, in, 0)
	if sb.LogDirectory != "/logs/cfg_web_uid-1" || sb.Metadata.Uid != "uid-1" || sb.Hostname != "" {
		t.Errorf("sandbox logDirectory %q, hostname %q, metadata %+v", sb.LogDirectory, sb.Hostname, sb.Metadata)
	}
	if got := LogDirectory("/logs", pod); got != "/logs/cfg_web_uid-1" {
		t.Errorf("LogDirectory = %q", got)
	}
}

func TestBuildErrors(t *testing.T) {
	cases := []struct {
		name   string
		c      v1.Container
		is     error
		substr string
	}{
		{"no command", v1.Container{Name: "c", Image: "nginx"}, ErrNoCommand, `"nginx"`},
		{"a volume not set up", v1.Container{Name: "c", Command: []string{"sh"}, VolumeMounts: []v1.VolumeMount{{Name: "v", MountPath: "/v"}}}, nil, `cannot find volume "v" to mount into container "c"`},
		{"a subPath out of its volume", v1.Container{Name: "c", Command: []string{"sh"}, VolumeMounts: []v1.VolumeMount{{Name: "cfg", MountPath: "/v", SubPath: "../x"}}}, nil, `must be a relative path without '..'`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := inputs()
			in.Volumes = map[string]string{"cfg": "/v/cfg"}
			_, err := Build(testPod("nocmd", tc.c), &tc.c, in)
			if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) || !strings.Contains(err.Error(), tc.substr) {
				t.Errorf("error = %v, want one with %q", err, tc.substr)
			}
		})
	}
}

func TestNextRestartCount(t *testing.T) {
	cases := []struct {
		name string
		last *podruntime.Container
		logs []string
		want int
	}{
		{"the runtime's last instance", &podruntime.Container{RestartCount: 4}, []string{"9.log"}, 5},
		{"no instance, no log", nil, nil, 0},
		{"no instance: after the largest log", nil, []string{"0.log", "2.log", "1.log.20260101-000000", "x.log", "notes"}, 3},
	}
	for _, tc := range cases {
		if got := NextRestartCount(tc.last, tc.logs); got != tc.want {
			t.Errorf("%s: NextRestartCount = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestReferences(t *testing.T) {
	pod := volumesPod()
	pod.Spec.InitContainers = []v1.Container{{Name: "i", EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "init-s"}}}}}}
	pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, v1.EnvVar{Name: "X", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Key: "a"}}})
	cms, secrets := References(pod)
	if d := cmp.Diff([]string{"absent", "cm"}, cms); d != "" {
		t.Errorf("configMaps (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"init-s", "s"}, secrets); d != "" {
		t.Errorf("secrets (-want +got):\n%s", d)
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
		in        Inputs
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
		{name: "runAsNonRoot, image user 65534", pod: &v1.PodSecurityContext{RunAsNonRoot: &yes}, in: Inputs{RunsImages: true, ImageUser: &ImageUser{UID: i(65534)}}},
		{name: "runAsNonRoot, image without a user", pod: &v1.PodSecurityContext{RunAsNonRoot: &yes}, in: Inputs{RunsImages: true},
			err: `container has runAsNonRoot and image will run as root (pod: "web_sec(uid-1)", container: c)`},
		{name: "runAsNonRoot, image user 0", pod: &v1.PodSecurityContext{RunAsNonRoot: &yes}, in: Inputs{RunsImages: true, ImageUser: &ImageUser{UID: i(0)}},
			err: `container has runAsNonRoot and image will run as root (pod: "web_sec(uid-1)", container: c)`},
		{name: "runAsNonRoot, image user by name", pod: &v1.PodSecurityContext{RunAsNonRoot: &yes}, in: Inputs{RunsImages: true, ImageUser: &ImageUser{Name: "app"}},
			err: `container has runAsNonRoot and image has non-numeric user (app), cannot verify user is non-root (pod: "web_sec(uid-1)", container: c)`},
		{name: "runAsNonRoot, runAsUser over the image's root", pod: &v1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: i(5)}, in: Inputs{RunsImages: true, ImageUser: &ImageUser{UID: i(0)}}, wantUser: i(5)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := v1.Container{Name: "c", SecurityContext: tc.container}
			pod := testPod("sec", c)
			pod.Spec.SecurityContext = tc.pod
			sc, err := securityContext(pod, &c, tc.in)
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

// TestPodResourcesAsKubelet: the pod cgroup of every class, with the
// figures of upstream 1.37's TestResourceConfigForPod
// (pkg/kubelet/cm/helpers_linux_test.go; cpu quota enforced, the default
// period), and the sidecar and overhead sums of upstream's PodRequests and
// PodLimits, which Kite's former sum (containers, then the largest init
// container) missed. Pods are written as the API returns them: requests
// defaulted from limits.
func TestPodResourcesAsKubelet(t *testing.T) {
	const Mi = 1 << 20
	rl := resourceList
	rr := func(req, lim v1.ResourceList) v1.ResourceRequirements {
		return v1.ResourceRequirements{Requests: req, Limits: lim}
	}
	always := v1.ContainerRestartPolicyAlways
	sidecar := func(r v1.ResourceRequirements) v1.Container {
		return v1.Container{Name: "sidecar", RestartPolicy: &always, Resources: r}
	}
	ctr := func(name string, r v1.ResourceRequirements) v1.Container {
		return v1.Container{Name: name, Resources: r}
	}
	type want struct{ shares, period, quota, mem int64 }
	cases := []struct {
		name       string
		init, ctrs []v1.Container
		podLevel   *v1.ResourceRequirements
		overhead   v1.ResourceList
		want       want
	}{
		// Upstream's cases and figures.
		{name: "besteffort", ctrs: []v1.Container{ctr("c", rr(nil, nil))}, want: want{shares: 2}},
		{name: "burstable-no-limits", ctrs: []v1.Container{ctr("c", rr(rl("100m", "100Mi"), nil))}, want: want{shares: 102}},
		{name: "burstable-with-limits", ctrs: []v1.Container{ctr("c", rr(rl("100m", "100Mi"), rl("200m", "200Mi")))}, want: want{102, 100000, 20000, 200 * Mi}},
		{name: "burstable-partial-limits", ctrs: []v1.Container{ctr("a", rr(rl("100m", "100Mi"), rl("200m", "200Mi"))), ctr("b", rr(rl("100m", "100Mi"), nil))}, want: want{shares: 204}},
		{name: "guaranteed", ctrs: []v1.Container{ctr("c", rr(rl("100m", "100Mi"), rl("100m", "100Mi")))}, want: want{102, 100000, 10000, 100 * Mi}},
		{name: "burstable-partial-limits-with-init-containers",
			init: []v1.Container{ctr("i1", rr(rl("100m", "100m"), rl("100m", "100Mi"))), ctr("i2", rr(rl("100m", "100m"), nil))},
			ctrs: []v1.Container{ctr("a", rr(rl("100m", "100m"), rl("100m", "100Mi"))), ctr("b", rr(rl("100m", "100m"), nil))}, want: want{shares: 204}},
		{name: "besteffort-with-pod-level-resources-enabled", ctrs: []v1.Container{ctr("c", rr(nil, nil))}, podLevel: &v1.ResourceRequirements{Requests: rl("", ""), Limits: rl("", "")}, want: want{shares: 2}},
		{name: "burstable-with-pod-level-requests", ctrs: []v1.Container{ctr("c", rr(nil, nil))}, podLevel: &v1.ResourceRequirements{Requests: rl("100m", "100Mi")}, want: want{shares: 102}},
		{name: "burstable-with-pod-and-container-level-requests", ctrs: []v1.Container{ctr("c", rr(rl("10m", "50Mi"), nil))}, podLevel: &v1.ResourceRequirements{Requests: rl("100m", "100Mi")}, want: want{shares: 102}},
		{name: "burstable-with-pod-level-resources", ctrs: []v1.Container{ctr("c", rr(nil, nil))}, podLevel: &v1.ResourceRequirements{Requests: rl("100m", "100Mi"), Limits: rl("200m", "200Mi")}, want: want{102, 100000, 20000, 200 * Mi}},
		{name: "burstable-with-pod-and-container-level-resources", ctrs: []v1.Container{ctr("c", rr(rl("10m", "50Mi"), rl("50m", "100Mi")))}, podLevel: &v1.ResourceRequirements{Requests: rl("100m", "100Mi"), Limits: rl("200m", "200Mi")}, want: want{102, 100000, 20000, 200 * Mi}},
		{name: "burstable-with-partial-pod-level-resources-limits", ctrs: []v1.Container{ctr("c", rr(rl("200m", "200Mi"), rl("200m", "200Mi")))}, podLevel: &v1.ResourceRequirements{Requests: rl("200m", "300Mi")}, want: want{204, 100000, 20000, 200 * Mi}},
		{name: "guaranteed-with-pod-level-resources", ctrs: []v1.Container{ctr("c", rr(nil, nil))}, podLevel: &v1.ResourceRequirements{Requests: rl("100m", "100Mi"), Limits: rl("100m", "100Mi")}, want: want{102, 100000, 10000, 100 * Mi}},
		{name: "guaranteed-pod-level-resources-with-init-containers", init: []v1.Container{ctr("i", rr(rl("10m", "50Mi"), rl("50m", "50Mi")))}, ctrs: []v1.Container{ctr("c", rr(rl("10m", "50Mi"), rl("50m", "50Mi")))},
			podLevel: &v1.ResourceRequirements{Requests: rl("100m", "100Mi"), Limits: rl("100m", "100Mi")}, want: want{102, 100000, 10000, 100 * Mi}},

		// Sidecars run beside the containers: they count into the sum,
		// and an init container after a sidecar runs beside it (was:
		// quota 30000, memory 128Mi, 256 shares).
		{name: "burstable with a sidecar before an init container",
			init: []v1.Container{sidecar(rr(rl("100m", "64Mi"), rl("200m", "128Mi"))), ctr("init", rr(rl("250m", "32Mi"), rl("250m", "32Mi")))},
			ctrs: []v1.Container{ctr("app", rr(rl("200m", "64Mi"), rl("300m", "128Mi")))},
			// requests max(200m+100m, 100m+250m) = 350m; limits
			// max(300m+200m, 200m+250m) = 500m, max(128+128, 128+32) Mi.
			want: want{358, 100000, 50000, 256 * Mi}},
		{name: "an init container before the sidecar runs alone",
			init: []v1.Container{ctr("init", rr(rl("1", "512Mi"), rl("1", "512Mi"))), sidecar(rr(rl("100m", "64Mi"), rl("200m", "128Mi")))},
			ctrs: []v1.Container{ctr("app", rr(rl("200m", "64Mi"), rl("300m", "128Mi")))},
			want: want{1024, 100000, 100000, 512 * Mi}},
		{name: "a sidecar without limits leaves the pod unbounded",
			init: []v1.Container{sidecar(rr(rl("100m", "64Mi"), nil))},
			ctrs: []v1.Container{ctr("app", rr(rl("200m", "64Mi"), rl("300m", "128Mi")))},
			want: want{shares: 307}},
		{name: "guaranteed with a sidecar",
			init: []v1.Container{sidecar(rr(rl("100m", "64Mi"), rl("100m", "64Mi")))},
			ctrs: []v1.Container{ctr("app", rr(rl("200m", "128Mi"), rl("200m", "128Mi")))},
			want: want{307, 100000, 30000, 192 * Mi}},

		// The RuntimeClass's overhead (spec.overhead): added to the
		// requests and to the limits that are set.
		{name: "guaranteed with overhead", ctrs: []v1.Container{ctr("c", rr(rl("100m", "100Mi"), rl("100m", "100Mi")))}, overhead: rl("250m", "120Mi"),
			want: want{358, 100000, 35000, 220 * Mi}},
		{name: "burstable with overhead, memory unlimited", ctrs: []v1.Container{ctr("c", rr(rl("100m", "100Mi"), rl("200m", "")))}, overhead: rl("250m", "120Mi"),
			want: want{shares: 358, period: 100000, quota: 45000}},
		{name: "besteffort with overhead", ctrs: []v1.Container{ctr("c", rr(nil, nil))}, overhead: rl("250m", "120Mi"), want: want{shares: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1.Pod{Spec: v1.PodSpec{InitContainers: tc.init, Containers: tc.ctrs, Resources: tc.podLevel, Overhead: tc.overhead}}
			r := podResources(p)
			got := want{r.CpuShares, r.CpuPeriod, r.CpuQuota, r.MemoryLimitInBytes}
			if got != tc.want {
				t.Errorf("shares, period, quota, memory = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestOOMScoreAdjAsKubelet: upstream's GetContainerOOMScoreAdjust
// (pkg/kubelet/qos/policy.go) over a node of 4000 bytes.
func TestOOMScoreAdjAsKubelet(t *testing.T) {
	capacity := v1.ResourceList{v1.ResourceMemory: *resource.NewQuantity(4000, resource.DecimalSI)}
	mem := func(n int64) v1.ResourceList {
		return v1.ResourceList{v1.ResourceMemory: *resource.NewQuantity(n, resource.DecimalSI)}
	}
	guaranteed := v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1")},
		Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1")}}
	always := v1.ContainerRestartPolicyAlways
	critical := int32(2000001000)
	cases := []struct {
		name string
		pod  func(p *v1.Pod)
		of   string
		want int64
	}{
		{name: "guaranteed", pod: func(p *v1.Pod) { p.Spec.Containers[0].Resources = guaranteed }, want: -997},
		{name: "best effort", want: 1000},
		{name: "node-critical best effort", pod: func(p *v1.Pod) { p.Spec.Priority, p.Spec.PriorityClassName = &critical, "system-node-critical" }, want: -997},
		{name: "cluster-critical best effort stays", pod: func(p *v1.Pod) { p.Spec.Priority, p.Spec.PriorityClassName = &critical, "system-cluster-critical" }, want: 1000},
		{name: "burstable, a quarter of the node", pod: func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests = mem(1000) }, want: 750},
		{name: "burstable, all of it", pod: func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests = mem(4000) }, want: 3},
		{name: "burstable, nothing of it", pod: func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests = mem(1000)
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "d"})
		}, of: "d", want: 999},
		{name: "a sidecar no higher than the smallest regular container", pod: func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests = mem(1000)
			p.Spec.InitContainers = []v1.Container{{Name: "s", RestartPolicy: &always, Resources: v1.ResourceRequirements{Requests: mem(100)}}}
		}, of: "s", want: 750},
		{name: "an ordinary init container by its own request", pod: func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests = mem(1000)
			p.Spec.InitContainers = []v1.Container{{Name: "s", Resources: v1.ResourceRequirements{Requests: mem(100)}}}
		}, of: "s", want: 975},
		{name: "pod-level memory left over is shared", pod: func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests = mem(1000)
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "d"})
			p.Spec.Resources = &v1.ResourceRequirements{Requests: mem(3000)}
		}, of: "d", want: 750},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
			if tc.pod != nil {
				tc.pod(p)
			}
			name := tc.of
			if name == "" {
				name = "c"
			}
			var c *v1.Container
			for _, x := range allContainers(p) {
				if x.Name == name {
					c = x
				}
			}
			if got := oomScoreAdj(p, c, capacity); got != tc.want {
				t.Errorf("oomScoreAdj = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestSandboxDNSConfig(t *testing.T) {
	host := ParseResolvConf([]byte("# generated\nnameserver 10.0.0.2\nnameserver 10.0.0.3\nsearch a.example b.example\noptions ndots:2 edns0\n"))
	if d := cmp.Diff(&runtimeapi.DNSConfig{Servers: []string{"10.0.0.2", "10.0.0.3"}, Searches: []string{"a.example", "b.example"}, Options: []string{"ndots:2", "edns0"}}, host, protocmp.Transform()); d != "" {
		t.Fatalf("ParseResolvConf (-want +got):\n%s", d)
	}
	three := "3"
	cases := []struct {
		name   string
		policy v1.DNSPolicy
		pod    *v1.PodDNSConfig
		want   *runtimeapi.DNSConfig
	}{
		{name: "Default without dnsConfig: the node's as it is", policy: v1.DNSDefault, want: host},
		{name: "Default merges the pod's", policy: v1.DNSDefault,
			pod:  &v1.PodDNSConfig{Nameservers: []string{"10.0.0.3", "1.1.1.1"}, Searches: []string{"c.example"}, Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: &three}}},
			want: &runtimeapi.DNSConfig{Servers: []string{"10.0.0.2", "10.0.0.3", "1.1.1.1"}, Searches: []string{"a.example", "b.example", "c.example"}, Options: []string{"edns0", "ndots:3"}}},
		{name: "None takes the pod's alone", policy: v1.DNSNone,
			pod:  &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}},
			want: &runtimeapi.DNSConfig{Servers: []string{"1.1.1.1"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod("dns", v1.Container{Name: "c", Ports: []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080}, {ContainerPort: 53, Protocol: v1.ProtocolUDP}}})
			pod.Spec.DNSPolicy, pod.Spec.DNSConfig = tc.policy, tc.pod
			sb := SandboxConfig(pod, Inputs{HostDNS: host}, 0)
			if d := cmp.Diff(tc.want, sb.DnsConfig, protocmp.Transform()); d != "" {
				t.Errorf("DnsConfig (-want +got):\n%s", d)
			}
			if len(sb.PortMappings) != 1 || sb.PortMappings[0].HostPort != 8080 || sb.PortMappings[0].ContainerPort != 80 {
				t.Errorf("PortMappings = %v, want only 80 on host port 8080", sb.PortMappings)
			}
		})
	}
}

// TestPodCgroupResize: the order the kubelet's doPodResizeAction gives a
// resized pod cgroup its limits in.
func TestPodCgroupResize(t *testing.T) {
	res := func(shares, quota, mem int64) *runtimeapi.LinuxContainerResources {
		r := &runtimeapi.LinuxContainerResources{CpuShares: shares, CpuQuota: quota, MemoryLimitInBytes: mem}
		if quota > 0 {
			r.CpuPeriod = 100000
		}
		return r
	}
	cases := []struct {
		name                string
		have, want          *runtimeapi.LinuxContainerResources
		wantBefore, wantAft *runtimeapi.LinuxContainerResources
	}{
		{"unchanged", res(102, 20000, 1<<28), res(102, 20000, 1<<28), nil, nil},
		{"unknown: after", nil, res(102, 20000, 1<<28), nil, res(102, 20000, 1<<28)},
		{"all grow: before", res(102, 20000, 1<<28), res(204, 40000, 1<<29), res(204, 40000, 1<<29), nil},
		{"all shrink: after", res(204, 40000, 1<<29), res(102, 20000, 1<<28), nil, res(102, 20000, 1<<28)},
		{"cpu grows, memory shrinks: both", res(102, 20000, 1<<29), res(204, 40000, 1<<28), res(204, 40000, 1<<29), res(204, 40000, 1<<28)},
		{"a limit appears: after", res(102, 0, 0), res(102, 20000, 1<<28), nil, res(102, 20000, 1<<28)},
		{"a limit is not taken away", res(102, 20000, 1<<28), res(204, 0, 0), res(204, 20000, 1<<28), nil},
		{"shares only, down", res(204, 0, 0), res(102, 0, 0), nil, res(102, 0, 0)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, after := PodCgroupResize(tc.have, tc.want)
			if d := cmp.Diff(tc.wantBefore, before, protocmp.Transform()); d != "" {
				t.Errorf("before (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantAft, after, protocmp.Transform()); d != "" {
				t.Errorf("after (-want +got):\n%s", d)
			}
		})
	}
}

// TestPodResourcesHugePages: the pod cgroup's huge page limits are the
// requests of each page size summed as the other requests are (sidecars
// beside the containers), named as runc names page sizes.
func TestPodResourcesHugePages(t *testing.T) {
	hp := func(l ...string) v1.ResourceList {
		out := v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi")}
		for i := 0; i+1 < len(l); i += 2 {
			out[v1.ResourceName(l[i])] = resource.MustParse(l[i+1])
		}
		return out
	}
	always := v1.ContainerRestartPolicyAlways
	p := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "s", RestartPolicy: &always, Resources: v1.ResourceRequirements{Requests: hp("hugepages-2Mi", "2Mi"), Limits: hp("hugepages-2Mi", "2Mi")}}},
		Containers:     []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: hp("hugepages-2Mi", "4Mi", "hugepages-1Gi", "1Gi"), Limits: hp("hugepages-2Mi", "4Mi", "hugepages-1Gi", "1Gi")}}},
	}}
	want := []*runtimeapi.HugepageLimit{{PageSize: "2MB", Limit: 6 << 20}, {PageSize: "1GB", Limit: 1 << 30}}
	if d := cmp.Diff(want, podResources(p).HugepageLimits, protocmp.Transform()); d != "" {
		t.Errorf("hugepage limits (-want +got):\n%s", d)
	}
}
