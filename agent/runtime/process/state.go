package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/runtime/process/supervisor"
)

// observe returns what is known of c's process: its start record (nil if
// it never started) and its exit record (nil while it runs). A container
// whose process and supervisor are both gone without an exit record (the
// host rebooted, someone killed the supervisor) gets one with reason
// Unknown, so that it reads as exited from then on; a process under a
// reused PID is not taken for it, since aliveness checks the start time.
func (r *Runtime) observe(c *container) (*supervisor.StartedRecord, *supervisor.ExitRecord) {
	r.mu.Lock()
	st, ex := c.started, c.exit
	r.mu.Unlock()
	if ex != nil {
		return st, ex
	}
	if st == nil {
		var s supervisor.StartedRecord
		if supervisor.ReadRecord(c.dir, supervisor.StartedFile, &s) == nil {
			st = &s
		}
	}
	var e supervisor.ExitRecord
	if supervisor.ReadRecord(c.dir, supervisor.ExitFile, &e) == nil {
		ex = &e
	} else if st != nil && !st.Process.Alive() && !st.Supervisor.Alive() {
		if supervisor.ReadRecord(c.dir, supervisor.ExitFile, &e) == nil { // written as the supervisor exited
			ex = &e
		} else {
			ex = &supervisor.ExitRecord{
				ExitCode: 255, FinishedAt: time.Now().UnixNano(), Reason: "Unknown",
				Message: "the container's process and its supervisor are gone and left no exit record",
			}
			if err := supervisor.WriteRecord(c.dir, supervisor.ExitFile, *ex); err != nil && !errors.Is(err, os.ErrNotExist) {
				fmt.Fprintf(os.Stderr, "process runtime: %v\n", err) // (not exist: removed meanwhile)
			}
		}
	}
	r.mu.Lock()
	c.started, c.exit = st, ex
	r.mu.Unlock()
	if ex != nil {
		// The container ended (seen here first): its exec commands end
		// with it, as a PID namespace's processes end with its init.
		r.stopExecs(context.Background(), c.ID, false)
	}
	return st, ex
}

func containerState(st *supervisor.StartedRecord, ex *supervisor.ExitRecord) runtimeapi.ContainerState {
	switch {
	case ex != nil:
		return runtimeapi.ContainerState_CONTAINER_EXITED
	case st != nil:
		return runtimeapi.ContainerState_CONTAINER_RUNNING
	default:
		return runtimeapi.ContainerState_CONTAINER_CREATED
	}
}

// ListContainers implements runtime.Service.
func (r *Runtime) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	r.reapSupervisors()
	r.mu.Lock()
	cs := make([]*container, 0, len(r.containers))
	for _, c := range r.containers {
		if filter != nil {
			if filter.Id != "" && filter.Id != c.ID ||
				filter.PodSandboxId != "" && filter.PodSandboxId != c.SandboxID ||
				!labelsMatch(filter.LabelSelector, c.config.Labels) {
				continue
			}
		}
		cs = append(cs, c)
	}
	r.mu.Unlock()
	var out []*runtimeapi.Container
	for _, c := range cs {
		state := containerState(r.observe(c))
		if filter != nil && filter.State != nil && filter.State.State != state {
			continue
		}
		out = append(out, &runtimeapi.Container{
			Id: c.ID, PodSandboxId: c.SandboxID, Metadata: c.config.Metadata,
			Image: c.config.Image, ImageRef: c.config.GetImage().GetImage(),
			State: state, CreatedAt: c.CreatedAt,
			Labels: c.config.Labels, Annotations: c.config.Annotations,
		})
	}
	return out, nil
}

// ContainerStatus implements runtime.Service.
func (r *Runtime) ContainerStatus(ctx context.Context, containerID string) (*runtimeapi.ContainerStatus, error) {
	r.reapSupervisors()
	c, err := r.container(containerID)
	if err != nil {
		return nil, fmt.Errorf("container status: %w", err)
	}
	st, ex := r.observe(c)
	s := &runtimeapi.ContainerStatus{
		Id: c.ID, Metadata: c.config.Metadata, State: containerState(st, ex),
		CreatedAt: c.CreatedAt,
		Image:     c.config.Image, ImageRef: c.config.GetImage().GetImage(),
		Labels: c.config.Labels, Annotations: c.config.Annotations,
		Mounts: c.config.Mounts, LogPath: c.spec.LogPath,
		Resources: &runtimeapi.ContainerResources{Linux: c.config.GetLinux().GetResources()},
	}
	if st != nil {
		s.StartedAt = st.StartedAt
	}
	if ex != nil {
		s.FinishedAt, s.ExitCode, s.Reason, s.Message = ex.FinishedAt, ex.ExitCode, ex.Reason, ex.Message
	}
	return s, nil
}
