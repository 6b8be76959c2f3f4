package podsync

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/containerconfig"
	"github.com/kite-project/kite/agent/podactions"
	"github.com/kite-project/kite/agent/runtime"
)

// imageError is a container's image not being there: its Waiting reason
// and message, as the kubelet's image manager returns them.
type imageError struct {
	reason, msg string
}

func (e *imageError) Error() string { return e.reason + ": " + e.msg }

// ensureImage makes sure the container's image is there before it is
// created, as the kubelet's EnsureImageExists: the pull policy decides
// (podactions.ImageDecision); a pull goes through the runtime's
// ImageService with the Pulling and Pulled events (with its duration and
// the image's size); a failed pull is ErrImagePull and starts a back-off
// (10 s doubling to 5 min) during which the container waits in
// ImagePullBackOff. It returns the image's user, for runAsNonRoot. A
// runtime without images (the process runtime) has every image "already
// present".
func (m *Manager) ensureImage(ctx context.Context, pod *v1.Pod, c *v1.Container, sb *runtimeapi.PodSandboxConfig) (*containerconfig.ImageUser, error) {
	is, ok := m.rt.(runtime.ImageService)
	if !ok {
		m.events.ContainerEventf(pod, c.Name, v1.EventTypeNormal, "Pulled", "Container image %q already present on machine", c.Image)
		return nil, nil
	}
	img, err := is.ImageStatus(ctx, c.Image)
	if err != nil {
		msg := fmt.Sprintf("Failed to inspect image %q: %v", c.Image, err)
		m.events.ContainerEventf(pod, c.Name, v1.EventTypeWarning, "InspectFailed", "%s", msg)
		return nil, &imageError{podactions.ReasonImageInspectError, msg}
	}
	switch podactions.ImageDecision(c.ImagePullPolicy, img != nil) {
	case podactions.UsePresent:
		m.events.ContainerEventf(pod, c.Name, v1.EventTypeNormal, "Pulled", "Container image %q already present on machine", c.Image)
		return imageUser(img), nil
	case podactions.NeverPull:
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
		m.events.ContainerEventf(pod, c.Name, v1.EventTypeWarning, podactions.ReasonErrImageNeverPull, "%s", msg)
		return nil, &imageError{podactions.ReasonErrImageNeverPull, msg}
	}
	key := podactions.ImageKey(pod, c.Image)
	m.mu.Lock()
	inBackOff := m.imageBackOff.InBackOff(key, time.Now())
	m.mu.Unlock()
	if inBackOff {
		msg := fmt.Sprintf("Back-off pulling image %q", c.Image)
		m.events.ContainerEventf(pod, c.Name, v1.EventTypeNormal, "BackOff", "%s", msg)
		return nil, &imageError{podactions.ReasonImagePullBackOff, msg}
	}
	m.events.ContainerEventf(pod, c.Name, v1.EventTypeNormal, "Pulling", "Pulling image %q", c.Image)
	start := time.Now()
	_, err = is.PullImage(ctx, c.Image, nil, sb)
	if err != nil {
		m.events.ContainerEventf(pod, c.Name, v1.EventTypeWarning, "Failed", "Failed to pull image %q: %v", c.Image, err)
		m.mu.Lock()
		m.imageBackOff.Failed(key, time.Now())
		m.mu.Unlock()
		return nil, &imageError{podactions.ReasonErrImagePull, err.Error()}
	}
	m.mu.Lock()
	m.imageBackOff.Succeeded(key)
	m.mu.Unlock()
	took := time.Since(start).Truncate(time.Millisecond)
	img, err = is.ImageStatus(ctx, c.Image)
	if err != nil || img == nil {
		return nil, &imageError{podactions.ReasonErrImagePull, fmt.Sprintf("image %q pulled but not found: %v", c.Image, err)}
	}
	m.events.ContainerEventf(pod, c.Name, v1.EventTypeNormal, "Pulled", "Successfully pulled image %q in %v (%v including waiting). Image size: %d bytes.", c.Image, took, took, img.GetSize())
	return imageUser(img), nil
}

// imageUser is the user an image runs as, as the kubelet's getImageUser:
// its UID, else its user name, else root.
func imageUser(img *runtimeapi.Image) *containerconfig.ImageUser {
	switch {
	case img == nil:
		return nil
	case img.Uid != nil:
		return &containerconfig.ImageUser{UID: &img.Uid.Value}
	case img.Username != "":
		return &containerconfig.ImageUser{Name: img.Username}
	}
	return &containerconfig.ImageUser{UID: new(int64)}
}

// imageReason is the Waiting reason of an image error, or "".
func imageReason(err error) (reason, msg string) {
	var ie *imageError
	if errors.As(err, &ie) {
		return ie.reason, ie.msg
	}
	return "", ""
}
