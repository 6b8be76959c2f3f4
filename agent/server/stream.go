package server

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/runtime"
)

// streamOp is the kind of a session with a container.
type streamOp int

const (
	opExec streamOp = iota
	opAttach
)

// streamRefusal is the kubelet's answer to a session that reaches no
// container: its status code and plain-text body. The API server passes
// both on (its stream translator wraps them for a WebSocket client as
// "Internal error occurred: unable to upgrade connection: <body>").
type streamRefusal struct {
	code int
	msg  string
}

// agentPod is pod ns/name as the agent knows it, the kubelet's
// GetPodByName: nil and false when it does not. Without a Pods function
// every pod is taken as known, with no spec.
func (s *Server) agentPod(ns, name string) (*v1.Pod, bool) {
	if s.opts.Pods == nil {
		return nil, true
	}
	for _, p := range s.opts.Pods() {
		if p.Namespace == ns && p.Name == name {
			return p, true
		}
	}
	return nil, false
}

// podFullName is the kubelet's name of a pod in its messages
// (kubecontainer.BuildPodFullName).
func podFullName(ns, name string) string { return name + "_" + ns }

// streamTarget decides which container instance an exec or attach of
// container in pod ns/name (of uid, when the path names one) reaches, as
// the kubelet's GetExec and GetAttach over its findContainer: known and
// pod are agentPod's answer, running the runtime's running containers of
// the pod (findContainer reads the runtime's running pods only,
// GetPods(false)). A container that has not started yet, one that has
// exited and a name the pod does not have are all not found there:
//
//   - a pod the agent does not have: 404 "pod does not exist";
//   - exec, no running instance: 500 `container not found ("c")`;
//   - attach, no running instance: 500 "container c not found in pod
//     name_ns"; a pod of another uid than the path's: 500 "pod name_ns
//     not found".
//
// Of several running instances (an old pod of the same name still
// stopping), the agent's pod's is taken, else the newest.
func streamTarget(op streamOp, ns, name, uid, container string, pod *v1.Pod, known bool, running []*runtimeapi.Container) (string, *streamRefusal) {
	if !known {
		return "", &streamRefusal{http.StatusNotFound, "pod does not exist"}
	}
	full := podFullName(ns, name)
	notFound := func() *streamRefusal {
		if op == opExec {
			return &streamRefusal{http.StatusInternalServerError, fmt.Sprintf("container not found (%q)", container)}
		}
		return &streamRefusal{http.StatusInternalServerError, fmt.Sprintf("container %s not found in pod %s", container, full)}
	}
	var chosen *runtimeapi.Container
	for _, c := range running {
		l := c.GetLabels()
		if c.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING || l[runtime.LabelPodNamespace] != ns ||
			l[runtime.LabelPodName] != name || l[runtime.LabelContainerName] != container ||
			(uid != "" && l[runtime.LabelPodUID] != uid) {
			continue
		}
		switch {
		case chosen == nil:
			chosen = c
		case pod != nil && (chosen.GetLabels()[runtime.LabelPodUID] == string(pod.UID)) != (l[runtime.LabelPodUID] == string(pod.UID)):
			if l[runtime.LabelPodUID] == string(pod.UID) {
				chosen = c
			}
		case c.GetCreatedAt() > chosen.GetCreatedAt():
			chosen = c
		}
	}
	if chosen == nil {
		return "", notFound()
	}
	if op == opAttach && pod != nil {
		// GetAttach reads the container's spec (its tty) from the pod.
		if uid != "" && string(pod.UID) != uid {
			return "", &streamRefusal{http.StatusInternalServerError, fmt.Sprintf("pod %s not found", full)}
		}
		if podContainer(pod, container) == nil {
			return "", notFound()
		}
	}
	return chosen.GetId(), nil
}

// podContainer is the spec of container in pod, an ephemeral one's too
// (the kubelet's GetContainerSpec), or nil.
func podContainer(pod *v1.Pod, container string) *v1.Container {
	for _, cs := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			if cs[i].Name == container {
				return &cs[i]
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if ec := &pod.Spec.EphemeralContainers[i]; ec.Name == container {
			return (*v1.Container)(&ec.EphemeralContainerCommon)
		}
	}
	return nil
}

// findRunning is the instance an exec or attach reaches (streamTarget
// over the runtime's running containers), and the agent's pod (nil when
// unknown or without a Pods function).
func (s *Server) findRunning(ctx context.Context, op streamOp, ns, name, uid, container string) (instance, *v1.Pod, *streamRefusal) {
	pod, known := s.agentPod(ns, name)
	var running []*runtimeapi.Container
	if known {
		var err error
		running, err = s.opts.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{
			State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
			LabelSelector: map[string]string{runtime.LabelPodNamespace: ns, runtime.LabelPodName: name,
				runtime.LabelContainerName: container}})
		if err != nil {
			return instance{}, nil, &streamRefusal{http.StatusInternalServerError, err.Error()}
		}
	}
	id, refusal := streamTarget(op, ns, name, uid, container, pod, known, running)
	if refusal != nil {
		return instance{}, nil, refusal
	}
	st, err := s.opts.Runtime.ContainerStatus(ctx, id)
	if err != nil {
		// Gone since it was listed: as if it had not been running.
		_, refusal := streamTarget(op, ns, name, uid, container, pod, known, nil)
		return instance{}, nil, refusal
	}
	n, _ := strconv.Atoi(st.Annotations[runtime.AnnotationRestartCount])
	return instance{id: id, restartCount: n, running: st.State == runtimeapi.ContainerState_CONTAINER_RUNNING, logPath: st.LogPath}, pod, nil
}

// sessionUID is the uid a session names its pod by: the agent's pod's,
// else the path's.
func sessionUID(pod *v1.Pod, uid string) string {
	if pod != nil {
		return string(pod.UID)
	}
	return uid
}
