package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/runtime/process/supervisor"
)

// sandbox is a pod's sandbox: for host processes, its cgroup (the parent
// of its containers' cgroups) and its records.
type sandbox struct {
	sandboxRecord
	config *runtimeapi.PodSandboxConfig
}

func (s *sandbox) state() runtimeapi.PodSandboxState {
	if s.Stopped {
		return runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	}
	return runtimeapi.PodSandboxState_SANDBOX_READY
}

// CheckHandler refuses every runtime handler but the default (""): the
// process runtime runs a pod's containers as processes of the host and has
// nothing else to run them with, so a pod whose RuntimeClass asks for a
// handler (runc, a VM runtime, gVisor...) must not run here as if it had
// got one. A containerd without the handler refuses it the same way, and
// the kubelet reports both as FailedCreatePodSandBox.
func CheckHandler(handler string) error {
	if handler == "" {
		return nil
	}
	return fmt.Errorf("RuntimeHandler %q not supported: the process runtime has no runtime handlers, only the default", handler)
}

func (r *Runtime) sandboxDir(id string) string { return filepath.Join(r.root, sandboxesDir, id) }

// RunPodSandbox implements runtime.Service: it creates the pod's cgroup,
// with the pod-level limits of config.Linux.Resources if any, where the
// host has a writable one. The runtime has no handlers (CheckHandler).
func (r *Runtime) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	if config.GetMetadata().GetName() == "" {
		return "", errors.New("run pod sandbox: config has no metadata name")
	}
	if err := CheckHandler(runtimeHandler); err != nil {
		return "", fmt.Errorf("run pod sandbox %s: %w", config.Metadata.Name, err)
	}
	cfg, err := proto.Marshal(config)
	if err != nil {
		return "", fmt.Errorf("run pod sandbox %s: encode config: %w", config.Metadata.Name, err)
	}
	id := newID()
	rec := sandboxRecord{ID: id, CreatedAt: time.Now().UnixNano(), Config: cfg, BootID: r.bootID}
	if r.cgroups.unavailable == "" {
		rec.Cgroup = r.cgroups.root.Child("pod-" + id)
		if err := createCgroup(rec.Cgroup, config.GetLinux().GetResources(), true); err != nil {
			rec.Cgroup.Remove()
			return "", fmt.Errorf("run pod sandbox %s: %w", config.Metadata.Name, err)
		}
	}
	dir := r.sandboxDir(id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		rec.Cgroup.Remove()
		return "", fmt.Errorf("run pod sandbox %s: %w", config.Metadata.Name, err)
	}
	if err := supervisor.WriteRecord(dir, sandboxFile, rec); err != nil {
		os.RemoveAll(dir)
		rec.Cgroup.Remove()
		return "", fmt.Errorf("run pod sandbox %s: %w", config.Metadata.Name, err)
	}
	r.mu.Lock()
	r.sandboxes[id] = &sandbox{sandboxRecord: rec, config: proto.Clone(config).(*runtimeapi.PodSandboxConfig)}
	r.mu.Unlock()
	return id, nil
}

// StopPodSandbox implements runtime.Service: it kills every container of
// the sandbox at once (the kubelet has stopped them gracefully before)
// and marks it not ready. An unknown sandbox is not an error.
func (r *Runtime) StopPodSandbox(ctx context.Context, podSandboxID string) error {
	r.mu.Lock()
	s := r.sandboxes[podSandboxID]
	r.mu.Unlock()
	if s == nil {
		return nil
	}
	for _, c := range r.containersOf(podSandboxID) {
		if err := r.StopContainer(ctx, c.ID, 0); err != nil {
			return fmt.Errorf("stop pod sandbox %s: %w", podSandboxID, err)
		}
	}
	r.mu.Lock()
	stopped := s.sandboxRecord
	r.mu.Unlock()
	if stopped.Stopped {
		return nil
	}
	stopped.Stopped = true
	if err := supervisor.WriteRecord(r.sandboxDir(podSandboxID), sandboxFile, stopped); err != nil {
		return fmt.Errorf("stop pod sandbox %s: %w", podSandboxID, err)
	}
	r.mu.Lock()
	s.Stopped = true
	r.mu.Unlock()
	return nil
}

// RemovePodSandbox implements runtime.Service: it stops the sandbox,
// removes its containers, its cgroup and its records. An unknown sandbox
// is not an error.
func (r *Runtime) RemovePodSandbox(ctx context.Context, podSandboxID string) error {
	if err := r.StopPodSandbox(ctx, podSandboxID); err != nil {
		return err
	}
	for _, c := range r.containersOf(podSandboxID) {
		if err := r.RemoveContainer(ctx, c.ID); err != nil {
			return fmt.Errorf("remove pod sandbox %s: %w", podSandboxID, err)
		}
	}
	r.mu.Lock()
	s := r.sandboxes[podSandboxID]
	r.mu.Unlock()
	if s == nil {
		return nil
	}
	if err := s.Cgroup.Remove(); err != nil {
		return fmt.Errorf("remove pod sandbox %s: %w", podSandboxID, err)
	}
	if err := os.RemoveAll(r.sandboxDir(podSandboxID)); err != nil {
		return fmt.Errorf("remove pod sandbox %s: %w", podSandboxID, err)
	}
	r.mu.Lock()
	delete(r.sandboxes, podSandboxID)
	r.mu.Unlock()
	return nil
}

// PodSandboxStatus implements runtime.Service.
func (r *Runtime) PodSandboxStatus(ctx context.Context, podSandboxID string) (*runtimeapi.PodSandboxStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sandboxes[podSandboxID]
	if s == nil {
		return nil, notFound("pod sandbox", podSandboxID)
	}
	return &runtimeapi.PodSandboxStatus{
		Id:        s.ID,
		Metadata:  s.config.Metadata,
		State:     s.state(),
		CreatedAt: s.CreatedAt,
		Network:   &runtimeapi.PodSandboxNetworkStatus{},
		Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: &runtimeapi.NamespaceOption{
			Network: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_NODE, Ipc: runtimeapi.NamespaceMode_NODE,
		}}},
		Labels:      s.config.Labels,
		Annotations: s.config.Annotations,
	}, nil
}

// ListPodSandbox implements runtime.Service.
func (r *Runtime) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runtimeapi.PodSandbox
	for _, s := range r.sandboxes {
		if filter != nil {
			if filter.Id != "" && filter.Id != s.ID {
				continue
			}
			if filter.State != nil && filter.State.State != s.state() {
				continue
			}
			if !labelsMatch(filter.LabelSelector, s.config.Labels) {
				continue
			}
		}
		out = append(out, &runtimeapi.PodSandbox{
			Id: s.ID, Metadata: s.config.Metadata, State: s.state(), CreatedAt: s.CreatedAt,
			Labels: s.config.Labels, Annotations: s.config.Annotations,
		})
	}
	return out, nil
}

func labelsMatch(selector, labels map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}
