// Package imagegc removes unused images when the image file system fills
// up, with the kubelet's image garbage collection policy
// (pkg/kubelet/images/image_gc_manager.go): once the file system holding
// the images is used at HighThresholdPercent or more, the images no
// container uses are removed, least recently used first, until its use is
// down to LowThresholdPercent; an image detected less than MinAge ago, an
// image in use and a pinned one (the sandbox image) are never removed.
// Detect and Plan are the decisions; Manager is the runner.
package imagegc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// Policy is the kubelet's ImageGCPolicy.
type Policy struct {
	// HighThresholdPercent of the image file system's capacity in use
	// starts a collection (--image-gc-high-threshold, 85). 100 disables it.
	HighThresholdPercent int
	// LowThresholdPercent is what a collection frees down to
	// (--image-gc-low-threshold, 80).
	LowThresholdPercent int
	// MinAge is the least time since an image was first detected for it
	// to be removed (--minimum-image-ttl-duration, 2m).
	MinAge time.Duration
}

// DefaultPolicy is the kubelet's default.
var DefaultPolicy = Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute}

// Validate checks the thresholds as the kubelet does.
func (p Policy) Validate() error {
	switch {
	case p.HighThresholdPercent < 0 || p.HighThresholdPercent > 100:
		return fmt.Errorf("invalid HighThresholdPercent %d, must be in range [0-100]", p.HighThresholdPercent)
	case p.LowThresholdPercent < 0 || p.LowThresholdPercent > 100:
		return fmt.Errorf("invalid LowThresholdPercent %d, must be in range [0-100]", p.LowThresholdPercent)
	case p.LowThresholdPercent > p.HighThresholdPercent:
		return fmt.Errorf("LowThresholdPercent %d can not be higher than HighThresholdPercent %d", p.LowThresholdPercent, p.HighThresholdPercent)
	}
	return nil
}

// Record is what the collector knows of one image (by ID).
type Record struct {
	ID   string
	Size uint64
	// FirstDetected is when the image was first seen; LastUsed when a
	// container last used it (zero: never seen in use).
	FirstDetected, LastUsed time.Time
	Pinned                  bool
}

// InUse is the set of images the runtime's containers use (any state), by
// image ID and by the names containers were created with.
type InUse map[string]bool

// ContainersInUse is the InUse set of containers, with extra (the sandbox
// image's name) added.
func ContainersInUse(cs []*runtimeapi.Container, extra ...string) InUse {
	u := InUse{}
	for _, c := range cs {
		for _, k := range []string{c.GetImageRef(), c.GetImageId(), c.GetImage().GetImage()} {
			if k != "" {
				u[k] = true
			}
		}
	}
	for _, e := range extra {
		u[e] = true
	}
	return u
}

// uses says whether img is in u: by ID, a tag or a digest.
func (u InUse) uses(img *runtimeapi.Image) bool {
	if u[img.Id] {
		return true
	}
	return slices.ContainsFunc(img.RepoTags, func(t string) bool { return u[t] }) ||
		slices.ContainsFunc(img.RepoDigests, func(d string) bool { return u[d] })
}

// Detect updates records (by image ID) with the runtime's images at now,
// as the kubelet's detectImages: a new image is first detected now; an
// image in use was last used now; an image the runtime no longer has is
// forgotten. It returns the updated records.
func Detect(records map[string]Record, images []*runtimeapi.Image, inUse InUse, now time.Time) map[string]Record {
	out := make(map[string]Record, len(images))
	for _, img := range images {
		r, ok := records[img.Id]
		if !ok {
			r = Record{ID: img.Id, FirstDetected: now}
		}
		r.Size, r.Pinned = img.Size, img.Pinned
		if inUse.uses(img) {
			r.LastUsed = now
		}
		out[img.Id] = r
	}
	return out
}

// Usage is the image file system's size and free bytes.
type Usage struct {
	Capacity, Available uint64
}

// Plan is what a collection does: free BytesToFree bytes by removing
// Candidates in order until enough is freed.
type Plan struct {
	// UsagePercent is the file system's use, as the kubelet computes it.
	UsagePercent int
	// BytesToFree is zero when the use is below the high threshold.
	BytesToFree int64
	// Candidates are the removable images, least recently used (then
	// first detected) first.
	Candidates []Record
	// Eligible is the size of every candidate together.
	Eligible int64
}

// ErrInvalidCapacity is an image file system that reports no capacity.
var ErrInvalidCapacity = errors.New("invalid capacity 0 on image filesystem")

// MakePlan decides a collection at now (the time records were last
// detected at), as the kubelet's GarbageCollect and freeSpace: nothing
// below the high threshold; above it, enough to come down to the low
// threshold, from the images not in use since before now, not pinned,
// and detected at least MinAge ago.
func MakePlan(p Policy, u Usage, records map[string]Record, now time.Time) (Plan, error) {
	capacity, available := int64(u.Capacity), int64(u.Available)
	if available > capacity {
		available = capacity
	}
	if capacity == 0 {
		return Plan{}, ErrInvalidCapacity
	}
	plan := Plan{UsagePercent: 100 - int(available*100/capacity)}
	if plan.UsagePercent < p.HighThresholdPercent {
		return plan, nil
	}
	plan.BytesToFree = capacity*int64(100-p.LowThresholdPercent)/100 - available
	for _, r := range records {
		// In use at the last detection (its LastUsed is now), pinned, or
		// so new that a container may be about to use it.
		if r.Pinned || !r.LastUsed.Before(now) || now.Sub(r.FirstDetected) < p.MinAge {
			continue
		}
		plan.Candidates = append(plan.Candidates, r)
		plan.Eligible += int64(r.Size)
	}
	sort.Slice(plan.Candidates, func(i, j int) bool {
		a, b := plan.Candidates[i], plan.Candidates[j]
		if !a.LastUsed.Equal(b.LastUsed) {
			return a.LastUsed.Before(b.LastUsed)
		}
		if !a.FirstDetected.Equal(b.FirstDetected) {
			return a.FirstDetected.Before(b.FirstDetected)
		}
		return a.ID < b.ID
	})
	return plan, nil
}

// Runtime is what the collector needs of the CRI runtime.
type Runtime interface {
	ListImages(ctx context.Context) ([]*runtimeapi.Image, error)
	RemoveImage(ctx context.Context, image string) error
	ImageFsInfo(ctx context.Context) ([]*runtimeapi.FilesystemUsage, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
}

// Options configure a Manager.
type Options struct {
	Runtime Runtime
	Policy  Policy
	// SandboxImage is never removed, whatever the runtime says of it.
	SandboxImage string
	// Period between collections (the kubelet's 5 min when zero).
	Period time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Manager runs the collection. It is not safe for concurrent use: Run
// calls Collect from one goroutine.
type Manager struct {
	opts    Options
	records map[string]Record
}

// New checks the policy.
func New(opts Options) (*Manager, error) {
	if err := opts.Policy.Validate(); err != nil {
		return nil, fmt.Errorf("imagegc: %w", err)
	}
	if opts.Period == 0 {
		opts.Period = 5 * time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Manager{opts: opts, records: map[string]Record{}}, nil
}

// Run collects every Period until ctx ends, logging failures.
func (m *Manager) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	t := time.NewTicker(m.opts.Period)
	defer t.Stop()
	for {
		if _, err := m.Collect(ctx); err != nil {
			logger.Error(err, "Image garbage collection failed")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Collect detects the images and, above the high threshold, removes
// images as MakePlan orders them until enough is freed. It returns what
// it removed; an error when it could not free enough, with the kubelet's
// message.
func (m *Manager) Collect(ctx context.Context) ([]string, error) {
	rt := m.opts.Runtime
	now := m.opts.Now()
	images, err := rt.ListImages(ctx)
	if err != nil {
		return nil, fmt.Errorf("imagegc: list images: %w", err)
	}
	cs, err := rt.ListContainers(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("imagegc: list containers: %w", err)
	}
	var extra []string
	if m.opts.SandboxImage != "" {
		extra = append(extra, m.opts.SandboxImage)
	}
	m.records = Detect(m.records, images, ContainersInUse(cs, extra...), now)
	fs, err := rt.ImageFsInfo(ctx)
	if err != nil {
		return nil, fmt.Errorf("imagegc: image file system: %w", err)
	}
	u, err := usage(fs)
	if err != nil {
		return nil, err
	}
	plan, err := MakePlan(m.opts.Policy, u, m.records, now)
	if err != nil || plan.BytesToFree <= 0 {
		return nil, err
	}
	logger := klog.FromContext(ctx)
	logger.Info("Disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold",
		"usage", plan.UsagePercent, "highThreshold", m.opts.Policy.HighThresholdPercent, "amountToFree", plan.BytesToFree, "lowThreshold", m.opts.Policy.LowThresholdPercent)
	var removed []string
	var errs []error
	freed := int64(0)
	for _, c := range plan.Candidates {
		if err := rt.RemoveImage(ctx, c.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		logger.Info("Removed image", "imageID", c.ID, "size", c.Size)
		delete(m.records, c.ID)
		removed = append(removed, c.ID)
		freed += int64(c.Size)
		if freed >= plan.BytesToFree {
			break
		}
	}
	if len(errs) > 0 {
		return removed, fmt.Errorf("wanted to free %d bytes, but freed %d bytes space with errors in image deletion: %w", plan.BytesToFree, freed, errors.Join(errs...))
	}
	if freed < plan.BytesToFree {
		return removed, fmt.Errorf("Failed to garbage collect required amount of images. Attempted to free %d bytes, but only found %d bytes eligible to free.", plan.BytesToFree, freed)
	}
	return removed, nil
}

// usage is the file system's capacity and free bytes from the runtime's
// ImageFsInfo. The CRI reports used bytes (and inodes) only; the capacity
// and the free space are the file system's, read with statfs at the
// reported mount point.
func usage(fs []*runtimeapi.FilesystemUsage) (Usage, error) {
	if len(fs) == 0 || fs[0].GetFsId().GetMountpoint() == "" {
		return Usage{}, errors.New("imagegc: the runtime reports no image file system")
	}
	return statfs(fs[0].GetFsId().GetMountpoint())
}
