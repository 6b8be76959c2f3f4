package volumes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/agent/containerconfig"
)

// setup makes a namespace named after base (its name is the pod's
// namespace, testPod's) with a configMap "cm" {a: 1, b: two} and a
// secret "s" {token: sekret}, and a running Manager reading them.
func setup(t *testing.T, base string) (*Manager, string) {
	t.Helper()
	return setupAt(t, base, t.TempDir())
}

// setupAt is setup with root as the root directory.
func setupAt(t *testing.T, base, root string) (*Manager, string) {
	t.Helper()
	ns := fmt.Sprintf("%s-%x", base, time.Now().UnixNano()&0xffffffffff)
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
	m, err := New(Options{RootDir: root, Client: cs.CoreV1(), NodeName: "node1", HostIPs: []string{"10.1.2.3"}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { m.Run(runCtx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return m, ns
}

func optional() *bool { t := true; return &t }

func testPod(ns string, vols ...v1.Volume) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, UID: "uid-1", Labels: map[string]string{"app": "web"}},
		Spec:       v1.PodSpec{NodeName: "node1", Volumes: vols, Containers: []v1.Container{{Name: "c", Command: []string{"sh"}}}},
	}
}

// TestSetUp: the pod's volumes are on disk as containerconfig.Files says,
// with the configMaps and secrets read through the cache; a subPath that
// is missing is created when a container's configuration is built.
func TestSetUp(t *testing.T) {
	m, ns := setup(t, "vol-setup")
	mode := int32(0o600)
	pod := testPod(ns,
		v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Items: []v1.KeyToPath{{Key: "b", Path: "sub/b.txt", Mode: &mode}}}}},
		v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		v1.Volume{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
		v1.Volume{Name: "all", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "s"}}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Optional: optional()}}}}}},
	)
	ctx := context.Background()
	vols, err := m.SetUp(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	podDir := filepath.Join(m.opts.RootDir, "pods", "uid-1", "volumes")
	for path, want := range map[string]string{
		"kubernetes.io~configmap/cfg/sub/b.txt": "two",
		"kubernetes.io~downward-api/info/name":  "web",
		"kubernetes.io~projected/all/token":     "sekret",
	} {
		got, err := os.ReadFile(filepath.Join(podDir, path))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", path, got, err, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(podDir, "kubernetes.io~configmap/cfg/sub/b.txt")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("item mode = %v, %v; want 0600", fi, err)
	}
	if fi, err := os.Stat(vols["scratch"]); err != nil || !fi.IsDir() || vols["scratch"] != filepath.Join(podDir, "kubernetes.io~empty-dir/scratch") {
		t.Errorf("emptyDir %s: %v, %v", vols["scratch"], fi, err)
	}
	c := &v1.Container{Name: "c", Command: []string{"sh"}, VolumeMounts: []v1.VolumeMount{{Name: "scratch", MountPath: "/s", SubPath: "deep/er"}}}
	cfg, err := m.ContainerConfig(ctx, pod, c, 0, vols, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(cfg.Mounts[0].HostPath); err != nil || !fi.IsDir() || !strings.HasSuffix(cfg.Mounts[0].HostPath, "scratch/deep/er") {
		t.Errorf("subPath %s: %v, %v", cfg.Mounts[0].HostPath, fi, err)
	}
}

func TestSetUpErrors(t *testing.T) {
	m, ns := setup(t, "vol-err")
	cases := []struct {
		name string
		vol  v1.VolumeSource
		want string
	}{
		{"missing configMap", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}}},
			`MountVolume.SetUp failed for volume "v" : configmaps "nope" not found`},
		{"missing item key", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Items: []v1.KeyToPath{{Key: "zz", Path: "z"}}}},
			`MountVolume.SetUp failed for volume "v" : configmap references non-existent config key: zz`},
		{"missing secret", v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "nope"}},
			`MountVolume.SetUp failed for volume "v" : secrets "nope" not found`},
		{"unsupported", v1.VolumeSource{NFS: &v1.NFSVolumeSource{Server: "x", Path: "/"}}, "unsupported volume type"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.SetUp(context.Background(), testPod(ns, v1.Volume{Name: "v", VolumeSource: tc.vol}))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("SetUp error = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestVolumeUpdateIsAtomic: rewriting a content volume switches ..data
// and drops a key the new content no longer has.
func TestVolumeUpdateIsAtomic(t *testing.T) {
	dir := t.TempDir()
	if err := writeAtomic(dir, map[string]containerconfig.File{"a": {Data: []byte("1"), Mode: 0o644}, "b": {Data: []byte("2"), Mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	if err := writeAtomic(dir, map[string]containerconfig.File{"a": {Data: []byte("3"), Mode: 0o644}}); err != nil {
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
