package volumes

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// nobody is the user the permission tests read as.
const nobody = 65534

// asNobody runs name with args as user and group 65534, and returns its
// output and error.
func asNobody(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestVolumesAreNotReadableByOtherUsers: a root directory that already
// exists and that any user can traverse (an agent of before, or a
// directory made by hand) is made 0750, and so is its pods directory: a
// secret's files keep their default mode 0644, as upstream, but no other
// user reaches them, nor lists the pods.
func TestVolumesAreNotReadableByOtherUsers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to read as another user")
	}
	if _, err := exec.LookPath("cat"); err != nil {
		t.Skip("needs cat")
	}
	base := t.TempDir()
	root := filepath.Join(base, "root")
	if err := os.MkdirAll(filepath.Join(root, "pods"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(base), base, root, filepath.Join(root, "pods")} {
		if err := os.Chmod(d, 0o755); err != nil { // world-traversable, as a root dir may be
			t.Fatal(err)
		}
	}
	m, ns := setupAt(t, "vol-perm", root)
	pod := testPod(ns, v1.Volume{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}})
	vols, err := m.SetUp(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	token := filepath.Join(vols["s"], "token")
	if fi, err := os.Stat(token); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("secret file: mode %v, want upstream's default -rw-r--r-- (%v)", modeOf(fi), err)
	}
	for _, d := range []string{root, filepath.Join(root, "pods")} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != DirMode {
			t.Errorf("%s: mode %v, want %v (%v)", d, modeOf(fi), os.FileMode(DirMode), err)
		}
	}
	if out, err := asNobody(t, "cat", token); err == nil || strings.Contains(out, "sekret") {
		t.Errorf("user %d read the secret: %q, %v", nobody, out, err)
	}
	if out, err := asNobody(t, "ls", filepath.Join(root, "pods")); err == nil {
		t.Errorf("user %d listed the pods: %q", nobody, out)
	}
	// The check itself can fail: nobody reads a file it may read.
	open := filepath.Join(base, "open")
	if err := os.WriteFile(open, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := asNobody(t, "cat", open); err != nil || out != "hello" {
		t.Fatalf("user %d could not read a world-readable file: %q, %v", nobody, out, err)
	}
}

// TestModesAndFSGroup: defaultMode and item modes as the pod asks; with
// an fsGroup, upstream's ownership: the group on everything, read bits
// for it on the files of content volumes (read-only), read and write on
// an emptyDir, search bits and setgid on directories.
func TestModesAndFSGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to give files to a group")
	}
	m, ns := setup(t, "vol-modes")
	mode := func(m int32) *int32 { return &m }
	group := int64(1234)
	tests := []struct {
		name      string
		fsGroup   *int64
		vol       v1.VolumeSource
		file      string // relative to the volume; "" is the volume itself
		wantMode  os.FileMode
		wantGroup uint32
	}{
		{"secret default", nil, v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}, "token", 0o644, 0},
		{"secret defaultMode", nil, v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s", DefaultMode: mode(0o400)}}, "token", 0o400, 0},
		{"configMap item mode", nil, v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Items: []v1.KeyToPath{{Key: "a", Path: "a", Mode: mode(0o600)}}}}, "a", 0o600, 0},
		{"secret defaultMode with fsGroup", &group, v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s", DefaultMode: mode(0o400)}}, "token", 0o440, 1234},
		{"configMap item with fsGroup", &group, v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Items: []v1.KeyToPath{{Key: "a", Path: "a", Mode: mode(0o600)}}}}, "a", 0o640, 1234},
		{"emptyDir with fsGroup", &group, v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}, "", os.ModeSetgid | 0o777, 1234},
		{"emptyDir", nil, v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}, "", 0o777, 0},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod(ns, v1.Volume{Name: "v", VolumeSource: tc.vol})
			pod.UID = types.UID(fmt.Sprintf("uid-%d", i))
			pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: tc.fsGroup}
			vols, err := m.SetUp(context.Background(), pod)
			if err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(filepath.Join(vols["v"], tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode() & (os.ModePerm | os.ModeSetgid); got != tc.wantMode {
				t.Errorf("mode = %v, want %v", got, tc.wantMode)
			}
			if got := fi.Sys().(*syscall.Stat_t).Gid; got != tc.wantGroup {
				t.Errorf("group = %d, want %d", got, tc.wantGroup)
			}
		})
	}
}

func modeOf(fi os.FileInfo) os.FileMode {
	if fi == nil {
		return 0
	}
	return fi.Mode()
}
