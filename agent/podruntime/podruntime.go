// Package podruntime is the agent's view of one pod in the container
// runtime: its sandboxes and every container instance the runtime still
// has, newest first, as upstream's kubecontainer.PodStatus is. The pure
// decisions (package podactions: what to start or kill; package podstatus:
// the API status) read it; FromCRI builds it from the runtime's answers.
package podruntime

import (
	"encoding/json"
	"hash/fnv"
	"sort"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/runtime"
)

// State is a container instance's state, as kubecontainer.State.
type State int

const (
	Created State = iota
	Running
	Exited
	Unknown
)

func (s State) String() string {
	switch s {
	case Created:
		return "created"
	case Running:
		return "running"
	case Exited:
		return "exited"
	}
	return "unknown"
}

// Container is one instance of a container of the pod.
type Container struct {
	ID           string
	Name         string
	State        State
	CreatedAt    time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
	ExitCode     int32
	Reason       string
	Message      string
	Image        string
	ImageRef     string
	Hash         string // HashContainer of the spec it was created from
	RestartCount int
}

// Sandbox is one sandbox of the pod.
type Sandbox struct {
	ID        string
	Ready     bool
	Attempt   uint32
	CreatedAt time.Time
}

// Pod is what the runtime has of one pod. Sandboxes and Containers are
// sorted newest first.
type Pod struct {
	UID        types.UID
	Name       string
	Namespace  string
	Sandboxes  []Sandbox
	Containers []*Container
	// IPs are the addresses of the newest sandbox while it is ready
	// (the runtime's PodSandboxStatus network, primary first), as the
	// kubelet's determinePodSandboxIPs; none in the node's network.
	IPs []string
}

// Find is the newest instance of the named container, or nil.
func (p *Pod) Find(name string) *Container {
	if p == nil {
		return nil
	}
	for _, c := range p.Containers {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Instances are the instances of the named container, newest first.
func (p *Pod) Instances(name string) []*Container {
	if p == nil {
		return nil
	}
	var out []*Container
	for _, c := range p.Containers {
		if c.Name == name {
			out = append(out, c)
		}
	}
	return out
}

// Running lists the pod's running (or state-unknown) containers: those a
// stop must reach.
func (p *Pod) Running() []*Container {
	if p == nil {
		return nil
	}
	var out []*Container
	for _, c := range p.Containers {
		if c.State == Running || c.State == Unknown {
			out = append(out, c)
		}
	}
	return out
}

// HashContainer is the hash the agent records on a container to notice
// that its definition changed. Like upstream's kubecontainer.HashContainer
// it covers only the name and the image, so that a change of any other
// field (which the API server forbids on a running pod anyway) or a newer
// agent defaulting more fields never restarts a container.
func HashContainer(c *v1.Container) string {
	b, _ := json.Marshal(struct {
		Name  string `json:"name"`
		Image string `json:"image,omitempty"`
	}{c.Name, c.Image})
	h := fnv.New32a()
	h.Write(b)
	return strconv.FormatUint(uint64(h.Sum32()), 16)
}

// FromCRI builds a pod's view from its sandboxes and the statuses of its
// containers, as the runtime reported them. Containers are matched to the
// pod by their labels; annotations carry the hash and restart count.
func FromCRI(uid types.UID, name, namespace string, sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.ContainerStatus) *Pod {
	p := &Pod{UID: uid, Name: name, Namespace: namespace}
	for _, s := range sandboxes {
		sb := Sandbox{ID: s.GetId(), Ready: s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: time.Unix(0, s.GetCreatedAt())}
		if m := s.GetMetadata(); m != nil {
			sb.Attempt = m.GetAttempt()
		}
		p.Sandboxes = append(p.Sandboxes, sb)
	}
	sort.SliceStable(p.Sandboxes, func(i, j int) bool { return p.Sandboxes[i].CreatedAt.After(p.Sandboxes[j].CreatedAt) })
	for _, s := range containers {
		c := &Container{
			ID:         s.GetId(),
			Name:       s.GetLabels()[runtime.LabelContainerName],
			State:      stateOf(s.GetState()),
			CreatedAt:  unixNano(s.GetCreatedAt()),
			StartedAt:  unixNano(s.GetStartedAt()),
			FinishedAt: unixNano(s.GetFinishedAt()),
			ExitCode:   s.GetExitCode(),
			Reason:     s.GetReason(),
			Message:    s.GetMessage(),
			Image:      s.GetImage().GetImage(),
			ImageRef:   s.GetImageRef(),
			Hash:       s.GetAnnotations()[runtime.AnnotationContainerHash],
		}
		if c.Name == "" && s.GetMetadata() != nil {
			c.Name = s.GetMetadata().GetName()
		}
		c.RestartCount, _ = strconv.Atoi(s.GetAnnotations()[runtime.AnnotationRestartCount])
		p.Containers = append(p.Containers, c)
	}
	sort.SliceStable(p.Containers, func(i, j int) bool { return p.Containers[i].CreatedAt.After(p.Containers[j].CreatedAt) })
	return p
}

func stateOf(s runtimeapi.ContainerState) State {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return Created
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return Running
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return Exited
	}
	return Unknown
}

func unixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
