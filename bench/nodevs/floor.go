package main

// The floor: how fast any agent could start a burst over this containerd.
// It asks containerd's CRI for the pods directly, with no API server, no
// watch, no status write and no agent: for each pod one RunPodSandbox (the
// node's network, as Kite's agent on an existing runtime asks, so no CNI
// plugin runs), one CreateContainer and one StartContainer, the smallest
// configuration that runs the bench's container, at most --floor-parallel
// pods in flight. The wall time from the first call to the last
// StartContainer's answer bounds from below what an agent measured through
// the API server (create → watch sees Running) can reach on the same
// containerd and machine: an agent does all of these calls and more. The
// same goes for --seq pods started one at a time before the burst.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/kite-project/kite/bench/procstat"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// floorResult is what one floor run measured.
type floorResult struct {
	Label    string    `json:"label"`
	Started  time.Time `json:"started"`
	Load     []string  `json:"load"`
	Pods     int       `json:"pods"`
	Parallel int       `json:"parallel"` // pods in flight at most; 0: all at once
	// SeqP50MS and SeqP99MS: --seq pods one at a time, each from its
	// RunPodSandbox to its StartContainer's answer.
	SeqP50MS float64 `json:"seq_p50_ms"`
	SeqP99MS float64 `json:"seq_p99_ms"`
	// BurstMS is from the first call to the last StartContainer's answer.
	BurstMS  float64   `json:"burst_all_started_ms"`
	BurstCPU *burstCPU `json:"burst_cpu,omitempty"`
}

// floorOptions configures runFloor.
type floorOptions struct {
	label, sock, image, dir string
	seq, pods, parallel     int
	ctrdPID                 int
	acctDir                 string
	timeout                 time.Duration
}

func runFloor(ctx context.Context, o floorOptions) (*floorResult, error) {
	if o.sock == "" || o.dir == "" {
		return nil, errors.New("--containerd-socket and --floor-dir are required")
	}
	conn, err := grpc.NewClient("unix://"+o.sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", o.sock, err)
	}
	defer conn.Close()
	rs := runtimeapi.NewRuntimeServiceClient(conn)
	if _, err := rs.Version(ctx, &runtimeapi.VersionRequest{}); err != nil {
		return nil, fmt.Errorf("CRI version at %s: %w", o.sock, err)
	}
	r := &floorResult{Label: o.label, Started: time.Now(), Pods: o.pods, Parallel: o.parallel}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	cctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), 2*o.timeout)
	defer dcancel()
	var errs []error
	// The pods' cgroups (runc makes them, and leaves them) go on every
	// way out, after the sandboxes' tear-down.
	defer func() {
		for i := range o.pods + o.seq {
			for _, d := range cgroupDirs(floorCgroup(run, i)) {
				os.Remove(d)
			}
		}
		for _, d := range cgroupDirs("/nodevs-floor") {
			os.Remove(d)
		}
	}()

	// One at a time, then those pods removed, as an agent's are.
	r.Load = append(r.Load, procstat.Load())
	var lat []time.Duration
	var seq []string
	for i := range o.seq {
		t0 := time.Now()
		id, err := floorPod(cctx, rs, o, run, o.pods+i)
		if id != "" {
			seq = append(seq, id)
		}
		if err != nil {
			errs = append(errs, err)
			break
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		r.SeqP50MS, r.SeqP99MS = ms(pct(lat, 50)), ms(pct(lat, 99))
	}
	errs = append(errs, floorTeardown(dctx, rs, seq)...)
	if len(errs) > 0 {
		return r, errors.Join(errs...)
	}

	// All at once, at most o.parallel in flight.
	r.Load = append(r.Load, procstat.Load())
	var bc *burstCPU
	if o.ctrdPID > 0 && o.acctDir != "" {
		// This process stands in for the agent in the accounting.
		if bc, err = startBurstCPU(o.acctDir, os.Getpid(), o.ctrdPID, o.sock); err != nil {
			return nil, err
		}
		defer syscall.Acct("") // accounting off on every way out (stop switches it off first)
	}
	slots := o.parallel
	if slots <= 0 {
		slots = o.pods
	}
	sem := make(chan struct{}, slots)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		burst []string
	)
	start := time.Now()
	for i := range o.pods {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			id, err := floorPod(cctx, rs, o, run, i)
			mu.Lock()
			defer mu.Unlock()
			if id != "" {
				burst = append(burst, id)
			}
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	r.BurstMS = ms(time.Since(start))
	if bc != nil {
		if err := bc.stop(o.pods); err != nil {
			errs = append(errs, err)
		}
		r.BurstCPU = bc
	}
	errs = append(errs, floorTeardown(dctx, rs, burst)...)
	r.Load = append(r.Load, procstat.Load())
	return r, errors.Join(errs...)
}

// floorTeardown stops and removes the sandboxes (and so their containers).
func floorTeardown(ctx context.Context, rs runtimeapi.RuntimeServiceClient, sandboxes []string) []error {
	var errs []error
	for _, id := range sandboxes {
		if _, err := rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
			errs = append(errs, fmt.Errorf("stop sandbox %s: %w", id, err))
			continue
		}
		if _, err := rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
			errs = append(errs, fmt.Errorf("remove sandbox %s: %w", id, err))
		}
	}
	return errs
}

func floorCgroup(run string, i int) string {
	return "/nodevs-floor/pod" + run + "-" + strconv.Itoa(i)
}

// cgroupDirs is path in every cgroup v1 hierarchy and the unified one.
func cgroupDirs(path string) []string {
	dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", path))
	return append(dirs, filepath.Join("/sys/fs/cgroup", path))
}

// floorPod starts pod i: sandbox, container, start. It returns the
// sandbox's ID once there is one, for the tear-down.
func floorPod(ctx context.Context, rs runtimeapi.RuntimeServiceClient, o floorOptions, run string, i int) (string, error) {
	name := "floor-" + strconv.Itoa(i)
	uid := run + "-" + strconv.Itoa(i)
	logDir := filepath.Join(o.dir, "pods", uid)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return "", err
	}
	sb := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Uid: uid, Namespace: "nodevs-floor"},
		LogDirectory: logDir,
		Labels:       map[string]string{"io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": "nodevs-floor", "io.kubernetes.pod.uid": uid},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent: floorCgroup(run, i),
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
			},
		},
	}
	sresp, err := rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sb})
	if err != nil {
		return "", fmt.Errorf("RunPodSandbox %s: %w", name, err)
	}
	id := sresp.PodSandboxId
	cresp, err := rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: id,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "sleep"},
			Image:    &runtimeapi.ImageSpec{Image: o.image},
			Command:  []string{"sleep", "3600"},
			LogPath:  "sleep/0.log",
			Labels:   map[string]string{"io.kubernetes.container.name": "sleep"},
		},
		SandboxConfig: sb,
	})
	if err != nil {
		return id, fmt.Errorf("CreateContainer %s: %w", name, err)
	}
	if _, err := rs.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: cresp.ContainerId}); err != nil {
		return id, fmt.Errorf("StartContainer %s: %w", name, err)
	}
	return id, nil
}
