package cri

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/imagegc"
	"github.com/kite-project/kite/agent/runtime/cri"
	"github.com/kite-project/kite/agent/runtime/cri/critest"
)

// onlyUnder is the package's containerd with its image list cut down to
// the images named under prefix: the collection must not see the images
// the package's other tests run. Everything else is the runtime's.
type onlyUnder struct {
	*cri.Runtime
	prefix string
}

func (o onlyUnder) ListImages(ctx context.Context) ([]*runtimeapi.Image, error) {
	imgs, err := o.Runtime.ListImages(ctx)
	return slices.DeleteFunc(imgs, func(img *runtimeapi.Image) bool {
		return !slices.ContainsFunc(img.RepoTags, func(t string) bool { return strings.HasPrefix(t, o.prefix) })
	}), err
}

// TestImageGCRemovesOnlyOldUnusedImages: over the high threshold, the
// collector removes the images no container uses that were detected at
// least the minimum age ago, oldest first, and never the image a pod's
// container runs, the sandbox image, or an image detected since; it
// reports the kubelet's error when that frees too little.
func TestImageGCRemovesOnlyOldUnusedImages(t *testing.T) {
	rt := critest.Runtime(t)
	ctx := context.Background()
	reg := startRegistry(t, "kite", "pw", map[string]string{"": testArchive(t, "busybox")})
	name := func(repo string) string { return reg.host + "/kite/" + repo + ":1" }
	auth := &runtimeapi.AuthConfig{Username: "kite", Password: "pw"}
	pull := func(repo string) string {
		t.Helper()
		reg.variant(t, "kite/"+repo, "")
		id, err := rt.PullImage(ctx, name(repo), auth, nil)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	old1, old2, inUse, sandbox := pull("gc-old1"), pull("gc-old2"), pull("gc-inuse"), pull("gc-sandbox")

	a := startAgent(t, "cri-imagegc", t.TempDir())
	p := a.pod(t, "user", func(p *v1.Pod) {
		p.Spec.Containers[0].Image = name("gc-inuse")
		p.Spec.Containers[0].ImagePullPolicy = v1.PullIfNotPresent
		p.Spec.Containers[0].Args = []string{"sleep", "3600"}
	})
	a.wait(t, p, "Running", running)

	now := time.Now()
	m, err := imagegc.New(imagegc.Options{
		Runtime: onlyUnder{rt, reg.host + "/"},
		// Always over the threshold, down to nothing: every eligible
		// image goes, and it is never enough.
		Policy:       imagegc.Policy{HighThresholdPercent: 0, LowThresholdPercent: 0, MinAge: 5 * time.Minute},
		SandboxImage: name("gc-sandbox"),
		Now:          func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	removed, err := m.Collect(ctx)
	if len(removed) != 0 || err == nil || !strings.HasPrefix(err.Error(), "Failed to garbage collect required amount of images. Attempted to free ") ||
		!strings.HasSuffix(err.Error(), "but only found 0 bytes eligible to free.") {
		t.Fatalf("first collection (every image younger than the minimum age) removed %v, err %v", removed, err)
	}

	young := pull("gc-young")
	now = now.Add(10 * time.Minute)
	removed, err = m.Collect(ctx)
	want := []string{old1, old2}
	sort.Strings(want) // same first detection, never used: by ID
	if !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v (the old unused ones)", removed, want)
	}
	if err == nil || !strings.HasPrefix(err.Error(), "Failed to garbage collect required amount of images.") {
		t.Errorf("err = %v, want the kubelet's 'Failed to garbage collect required amount of images'", err)
	}
	for _, id := range []string{old1, old2, inUse, sandbox, young} {
		img, err := rt.ImageStatus(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if gone := img == nil; gone != slices.Contains(want, id) {
			t.Errorf("image %s: removed %t, want %t", id, gone, slices.Contains(want, id))
		}
	}
	if got := a.wait(t, p, "still Running", running); got.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("the pod's container restarted: %+v", got.Status.ContainerStatuses[0])
	}
}
