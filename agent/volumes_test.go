package agent

import (
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite/agent/volumes"
)

// TestNonRootPodsReadTheirSecretsOthersDoNot is the secret-volume story
// end to end, as a non-root user: a pod running as user 65534 with
// fsGroup 1234 reads its secret (defaultMode 0440) through its mount; the
// same pod without fsGroup cannot (the file is root's, 0440), as
// upstream; and the agent's root directory is 0750, so no other user
// reaches any pod's volumes on the host.
func TestNonRootPodsReadTheirSecretsOthersDoNot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: containers run as another user")
	}
	node := unique("secret-node")
	cfg := shared.RESTConfig()
	cs := clientset(t, cfg)
	ns := createNamespace(t, cs, "secret")
	if _, err := cs.CoreV1().Secrets(ns).Create(t.Context(), &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Data: map[string][]byte{"token": []byte("sekret")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	startPodAgent(t, Options{NodeName: node, RESTConfig: cfg, RootDir: root})
	// The mount point must be reachable by the container's user: /tmp.
	mnt, err := os.MkdirTemp("/tmp", "kite-secret-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(mnt) })
	if err := os.Chmod(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	user, group, mode := int64(65534), int64(1234), int32(0o440)
	pod := func(name string, fsGroup *int64) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.PodSpec{
			NodeName: node, RestartPolicy: v1.RestartPolicyNever,
			SecurityContext: &v1.PodSecurityContext{RunAsUser: &user, FSGroup: fsGroup},
			Volumes:         []v1.Volume{{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s", DefaultMode: &mode}}}},
			Containers: []v1.Container{{Name: "main", Image: "busybox", Command: []string{"sh", "-c", "cat " + filepath.Join(mnt, name, "token")},
				VolumeMounts: []v1.VolumeMount{{Name: "s", MountPath: filepath.Join(mnt, name), ReadOnly: true}}}},
		}}
	}
	for _, tc := range []struct {
		name    string
		fsGroup *int64
		want    v1.PodPhase
	}{
		{"with-fsgroup", &group, v1.PodSucceeded},
		{"without-fsgroup", nil, v1.PodFailed},
	} {
		if _, err := cs.CoreV1().Pods(ns).Create(t.Context(), pod(tc.name, tc.fsGroup), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := waitAPIPod(t, cs, ns, tc.name, "a terminal phase", func(p *v1.Pod) bool {
			return p != nil && (p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed)
		})
		if p.Status.Phase != tc.want {
			t.Errorf("pod %s: phase %s, want %s; containers %+v", tc.name, p.Status.Phase, tc.want, p.Status.ContainerStatuses)
		}
	}
	for _, d := range []string{root, filepath.Join(root, "pods")} {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != volumes.DirMode {
			t.Errorf("%s: mode %v, want %v", d, fi.Mode(), os.FileMode(volumes.DirMode))
		}
	}
}
