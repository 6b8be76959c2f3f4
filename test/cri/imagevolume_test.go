package cri

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite/agent/runtime/cri/critest"
)

// volumeImageArchive writes an OCI layout archive of a two-layer image,
// its layers gzip-compressed as a registry serves them: the first has
// data.json, etc/os-release, etc/removed and opq/old; the second
// rewrites etc/os-release, whites out etc/removed and makes opq opaque
// with opq/new in it.
func volumeImageArchive(t *testing.T) string {
	t.Helper()
	type file struct{ name, body string }
	tarOf := func(files ...file) []byte {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, f := range files {
			h := &tar.Header{Name: f.name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(f.body)), ModTime: time.Unix(0, 0)}
			if strings.HasSuffix(f.name, "/") {
				h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
			}
			tw.WriteHeader(h)
			tw.Write([]byte(f.body))
		}
		tw.Close()
		return buf.Bytes()
	}
	layers := [][]byte{
		tarOf(file{"./", ""}, file{"data.json", `{"image": "kitten.jpg"}`}, file{"etc/", ""}, file{"etc/os-release", "NAME=lower\n"},
			file{"etc/removed", "x"}, file{"opq/", ""}, file{"opq/old", "o"}),
		tarOf(file{"etc/", ""}, file{"etc/os-release", "NAME=\"upper layer\"\n"}, file{"etc/.wh.removed", ""}, file{"opq/", ""},
			file{"opq/.wh..wh..opq", ""}, file{"opq/new", "n"}),
	}
	blobs := map[string][]byte{}
	add := func(b []byte) (string, int) {
		sum := sha256.Sum256(b)
		d := "sha256:" + hex.EncodeToString(sum[:])
		blobs[d] = b
		return d, len(b)
	}
	var diffIDs, layerDescs []string
	for _, l := range layers {
		sum := sha256.Sum256(l)
		diffIDs = append(diffIDs, fmt.Sprintf("%q", "sha256:"+hex.EncodeToString(sum[:])))
		var gz bytes.Buffer
		w := gzip.NewWriter(&gz)
		w.Write(l)
		w.Close()
		d, n := add(gz.Bytes())
		layerDescs = append(layerDescs, fmt.Sprintf(`{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":%q,"size":%d}`, d, n))
	}
	cfg, cfgSize := add([]byte(`{"architecture":"amd64","os":"linux","config":{"Cmd":["sh"]},"rootfs":{"type":"layers","diff_ids":[` + strings.Join(diffIDs, ",") + `]}}`))
	mf, mfSize := add([]byte(fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":%q,"size":%d},"layers":[%s]}`,
		cfg, cfgSize, strings.Join(layerDescs, ","))))
	path := filepath.Join(t.TempDir(), "volume-image.tar")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	put := func(name string, b []byte) {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg})
		tw.Write(b)
	}
	put("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`))
	put("index.json", []byte(fmt.Sprintf(`{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":%q,"size":%d}]}`, mf, mfSize)))
	for d, b := range blobs {
		put("blobs/sha256/"+strings.TrimPrefix(d, "sha256:"), b)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// imageVolumePod is a busybox pod that sleeps with image as the volume
// "img" at /volume (subPath sub when not empty).
func imageVolumePod(image string, policy v1.PullPolicy, sub string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Containers[0].Args = []string{"sleep", "3600"}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "img", MountPath: "/volume", SubPath: sub}}
		p.Spec.Volumes = []v1.Volume{{Name: "img", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: image, PullPolicy: policy}}}}
	}
}

// copies are the image volumes' copies under the agent's root.
func copies(t *testing.T, a *testAgent) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(a.root, "image-volumes"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// waitCopies waits until the copies are n.
func waitCopies(t *testing.T, a *testAgent, n int) []string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := copies(t, a)
		if len(got) == n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("image volume copies: %q, want %d", got, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestImageVolumes: pods with image volumes on containerd 1.6, which
// ignores the CRI's image mounts. A volume whose image is pulled (policy
// Always, from a registry on 127.0.0.1 that needs the pod's
// imagePullSecrets; two gzip layers with whiteouts) shows the image's
// files as its layers make them, read-only, with the pull's events on the
// pod. Two pods mounting an imported image (IfNotPresent; one with a
// subPath) share one copy of it, which stays while either runs and goes
// when both pods are gone.
func TestImageVolumes(t *testing.T) {
	critest.Runtime(t)
	reg := startRegistry(t, "kite", "s3cret", map[string]string{"kite/vol": volumeImageArchive(t)})
	a := startAgent(t, "cri-imagevolume", t.TempDir())
	ctx := context.Background()

	volImage := reg.host + "/kite/vol:1"
	ns := strings.ToLower(t.Name())
	if _, err := a.cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	auth := base64.StdEncoding.EncodeToString([]byte(reg.user + ":" + reg.password))
	if _, err := a.cs.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred"}, Type: v1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(fmt.Sprintf(`{"auths":{"http://%s":{"auth":%q}}}`, reg.host, auth))}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pulled := a.pod(t, "pulled", func(p *v1.Pod) {
		imageVolumePod(volImage, v1.PullAlways, "")(p)
		p.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "regcred"}}
	})
	a.wait(t, pulled, "Running", running)
	// The upper layer's os-release, its whiteout and its opaque directory.
	for cmd, want := range map[string]string{
		"cat /volume/data.json":      `{"image": "kitten.jpg"}`,
		"cat /volume/etc/os-release": "NAME=\"upper layer\"\n",
		"ls /volume/opq":             "new\n",
		"ls /volume/etc":             "os-release\n",
	} {
		if out, err := a.exec(t, pulled, "sh", "-c", cmd); err != nil || out != want {
			t.Errorf("%s: %q, %v; want %q", cmd, out, err, want)
		}
	}
	if out, err := a.exec(t, pulled, "sh", "-c", "touch /volume/new-file && echo WROTE"); err == nil || strings.Contains(out, "WROTE") || !strings.Contains(out, "Read-only file system") {
		t.Errorf("a write to the image volume: %q, %v; want Read-only file system", out, err)
	}
	// The pull's events are the pod's, as the kubelet's for image volumes.
	a.waitEvent(t, pulled, "Pulling", fmt.Sprintf("Pulling image %q", volImage))
	a.waitEvent(t, pulled, "Pulled", fmt.Sprintf("Successfully pulled image %q", volImage))
	if reg.authorized.Load() == 0 {
		t.Error("the registry saw no request with the pod's credentials")
	}
	if got := copies(t, a); len(got) != 1 {
		t.Fatalf("copies after one pod: %q", got)
	}

	// Two pods of one imported image: one copy, shared.
	local := a.pod(t, "local", imageVolumePod(critest.BusyBox, v1.PullIfNotPresent, ""))
	sub := a.pod(t, "local-subpath", imageVolumePod(critest.BusyBox, v1.PullIfNotPresent, "etc"))
	a.wait(t, local, "Running", running)
	a.wait(t, sub, "Running", running)
	if out, err := a.exec(t, local, "/volume/bin/busybox", "echo", "from the image"); err != nil || !strings.Contains(out, "from the image") {
		t.Errorf("the image's busybox: %q, %v", out, err)
	}
	if out, err := a.exec(t, sub, "cat", "/volume/passwd"); err != nil || !strings.Contains(out, "root:x:0:0") {
		t.Errorf("subPath etc: /volume/passwd %q, %v", out, err)
	}
	a.waitEvent(t, local, "Pulled", fmt.Sprintf("Container image %q already present on machine", critest.BusyBox))
	both := waitCopies(t, a, 2)
	img, err := critest.Runtime(t).ImageStatus(ctx, critest.BusyBox)
	if err != nil || img == nil {
		t.Fatal(img, err)
	}
	busyboxCopy := strings.TrimPrefix(img.Id, "sha256:")
	if !slices.Contains(both, busyboxCopy) {
		t.Fatalf("copies %q: none is busybox's %s", both, busyboxCopy)
	}

	zero := int64(0)
	if err := a.cs.CoreV1().Pods(local.Namespace).Delete(ctx, local.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	// The pod's directory goes with it; the copy stays for the other.
	waitGone(t, filepath.Join(a.root, "pods", string(local.UID)))
	if got := copies(t, a); !slices.Contains(got, busyboxCopy) {
		t.Fatalf("busybox's copy went while pod %s still mounts it: %q", sub.Name, got)
	}
	if out, err := a.exec(t, sub, "cat", "/volume/passwd"); err != nil || !strings.Contains(out, "root:x:0:0") {
		t.Errorf("after the other pod went: /volume/passwd %q, %v", out, err)
	}
	if err := a.cs.CoreV1().Pods(sub.Namespace).Delete(ctx, sub.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if got := waitCopies(t, a, 1); slices.Contains(got, busyboxCopy) {
		t.Fatalf("busybox's copy stayed after both pods went: %q", got)
	}
}

// waitGone waits until path is no more.
func waitGone(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Lstat(path); os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is still there", path)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestImageVolumeOfAMissingImage: a volume whose image cannot be pulled
// keeps its container Waiting in ErrImagePull, with the runtime's error
// as the message and the Failed event on the pod, then in
// ImagePullBackOff, as the kubelet reports it; no copy is made.
func TestImageVolumeOfAMissingImage(t *testing.T) {
	critest.Runtime(t)
	a := startAgent(t, "cri-imagevolume-missing", t.TempDir())
	// Port 1 of 127.0.0.1: nothing listens, the pull fails at once.
	image := "127.0.0.1:1/kite/missing:1"
	p := a.pod(t, "missing", imageVolumePod(image, v1.PullIfNotPresent, ""))
	got := a.wait(t, p, "ErrImagePull", waiting("ErrImagePull"))
	if msg := got.Status.ContainerStatuses[0].State.Waiting.Message; !strings.HasPrefix(msg, "rpc error: code = ") || !strings.Contains(msg, image) {
		t.Errorf("ErrImagePull message = %q, want the runtime's error about %s", msg, image)
	}
	a.waitEvent(t, p, "Failed", fmt.Sprintf("Failed to pull image %q: rpc error: code = ", image))
	a.waitEvent(t, p, "Failed", "Error: ErrImagePull")
	a.wait(t, p, "ImagePullBackOff", waiting("ImagePullBackOff"))
	a.waitEvent(t, p, "BackOff", fmt.Sprintf("Back-off pulling image %q", image))
	if got := copies(t, a); len(got) != 0 {
		t.Errorf("copies of a missing image: %q", got)
	}
}
