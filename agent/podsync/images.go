package podsync

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/agent/containerconfig"
	"github.com/kite-project/kite/agent/credentialprovider"
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
// ImageService, with the credentials of the pod's imagePullSecrets for the
// image's registry (pullCredentials), with the Pulling and Pulled events (with its duration and
// the image's size); a failed pull is ErrImagePull and starts a back-off
// (10 s doubling to 5 min) during which the container waits in
// ImagePullBackOff. It returns the image's user, for runAsNonRoot. A
// runtime without images (the process runtime) has every image "already
// present".
func (m *Manager) ensureImage(ctx context.Context, pod *v1.Pod, c *v1.Container, sb *runtimeapi.PodSandboxConfig) (*containerconfig.ImageUser, error) {
	img, err := m.ensureImageRef(ctx, pod, c.Image, c.ImagePullPolicy, sb, func(eventType, reason, format string, args ...any) {
		m.events.ContainerEventf(pod, c.Name, eventType, reason, format, args...)
	})
	if err != nil {
		return nil, err
	}
	return imageUser(img), nil
}

// eventFunc records an event about what an image is pulled for: a
// container (its field path), or the pod (an image volume's, as the
// kubelet's image manager is given the pod's reference for those).
type eventFunc func(eventType, reason, format string, args ...any)

// ensureImageRef is ensureImage for image under policy, with its events
// through event. It returns the image as the runtime has it; nil without
// an error for a runtime without images.
func (m *Manager) ensureImageRef(ctx context.Context, pod *v1.Pod, image string, policy v1.PullPolicy, sb *runtimeapi.PodSandboxConfig, event eventFunc) (*runtimeapi.Image, error) {
	is, ok := m.rt.(runtime.ImageService)
	if !ok {
		event(v1.EventTypeNormal, "Pulled", "Container image %q already present on machine", image)
		return nil, nil
	}
	img, err := is.ImageStatus(ctx, image)
	if err != nil {
		msg := fmt.Sprintf("Failed to inspect image %q: %v", image, err)
		event(v1.EventTypeWarning, "InspectFailed", "%s", msg)
		return nil, &imageError{podactions.ReasonImageInspectError, msg}
	}
	switch podactions.ImageDecision(policy, img != nil) {
	case podactions.UsePresent:
		event(v1.EventTypeNormal, "Pulled", "Container image %q already present on machine", image)
		return img, nil
	case podactions.NeverPull:
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", image)
		event(v1.EventTypeWarning, podactions.ReasonErrImageNeverPull, "%s", msg)
		return nil, &imageError{podactions.ReasonErrImageNeverPull, msg}
	}
	key := podactions.ImageKey(pod, image)
	m.mu.Lock()
	inBackOff := m.imageBackOff.InBackOff(key, time.Now())
	m.mu.Unlock()
	if inBackOff {
		msg := fmt.Sprintf("Back-off pulling image %q", image)
		event(v1.EventTypeNormal, "BackOff", "%s", msg)
		return nil, &imageError{podactions.ReasonImagePullBackOff, msg}
	}
	creds, err := m.pullCredentials(ctx, pod, image)
	if err != nil {
		return nil, &imageError{podactions.ReasonErrImagePull, err.Error()}
	}
	event(v1.EventTypeNormal, "Pulling", "Pulling image %q", image)
	start := time.Now()
	err = pullWith(ctx, is, image, creds, sb)
	if err != nil {
		event(v1.EventTypeWarning, "Failed", "Failed to pull image %q: %v", image, err)
		m.mu.Lock()
		m.imageBackOff.Failed(key, time.Now())
		m.mu.Unlock()
		return nil, &imageError{podactions.ReasonErrImagePull, err.Error()}
	}
	m.mu.Lock()
	m.imageBackOff.Succeeded(key)
	m.mu.Unlock()
	took := time.Since(start).Truncate(time.Millisecond)
	img, err = is.ImageStatus(ctx, image)
	if err != nil || img == nil {
		return nil, &imageError{podactions.ReasonErrImagePull, fmt.Sprintf("image %q pulled but not found: %v", image, err)}
	}
	event(v1.EventTypeNormal, "Pulled", "Successfully pulled image %q in %v (%v including waiting). Image size: %d bytes.", image, took, took, img.GetSize())
	return img, nil
}

// contentStore is a runtime whose image files the agent can read
// (cri.Runtime: containerd's content store), for image volumes.
type contentStore interface {
	ContentStore(ctx context.Context) (string, error)
}

// imageVolumes are the host paths of the image volumes container c
// mounts, added to volumes (a copy): each volume's image is made sure of
// as a container's is (its pullPolicy, the pod's imagePullSecrets, the
// same back-off, events and reasons, but on the pod, as the kubelet's
// getImageVolumes), then its read-only copy is made (agent/volumes,
// image.go). A pull that fails is the container's image error
// (ErrImagePull, ImagePullBackOff, ...), as the kubelet's
// toKubeContainerImageVolumes; a copy that cannot be made is
// CreateContainerError, as a runtime's failed image mount is.
//
// Unlike the kubelet, which pulls every image volume of the pod once per
// sync before it starts any container, the agent pulls those a container
// mounts before it starts that container.
func (m *Manager) imageVolumes(ctx context.Context, pod *v1.Pod, c *v1.Container, sb *runtimeapi.PodSandboxConfig, volumes map[string]string) (map[string]string, error) {
	// The pod's image volumes by name, once: a pod with many volumes
	// and mounts is not scanned once per mount.
	var images map[string]*v1.ImageVolumeSource
	for i := range pod.Spec.Volumes {
		if src := pod.Spec.Volumes[i].Image; src != nil {
			if images == nil {
				images = map[string]*v1.ImageVolumeSource{}
			}
			images[pod.Spec.Volumes[i].Name] = src
		}
	}
	if images == nil {
		return volumes, nil
	}
	var out map[string]string
	for _, vm := range c.VolumeMounts {
		src := images[vm.Name]
		if src == nil {
			continue
		}
		if out == nil {
			out = maps.Clone(volumes)
			if out == nil {
				out = map[string]string{}
			}
		} else if _, done := out[vm.Name]; done {
			continue
		}
		img, err := m.ensureImageRef(ctx, pod, src.Reference, src.PullPolicy, sb, func(eventType, reason, format string, args ...any) {
			m.events.Eventf(pod, eventType, reason, format, args...)
		})
		if err != nil {
			return nil, err
		}
		cs, ok := m.rt.(contentStore)
		if !ok || img == nil {
			return nil, &volumeError{fmt.Errorf("image volume %q: the runtime cannot give the agent its images' files", vm.Name)}
		}
		dir, err := cs.ContentStore(ctx)
		if err != nil {
			return nil, &volumeError{fmt.Errorf("image volume %q: %w", vm.Name, err)}
		}
		path, err := m.volumes.ImageVolume(pod, vm.Name, img.Id, dir)
		if err != nil {
			return nil, &volumeError{err}
		}
		out[vm.Name] = path
	}
	if out == nil {
		return volumes, nil
	}
	return out, nil
}

// volumeError is an image volume whose copy could not be made.
type volumeError struct{ err error }

func (e *volumeError) Error() string { return e.err.Error() }
func (e *volumeError) Unwrap() error { return e.err }

// pullCredentials are the credentials of the pod's imagePullSecrets for
// image, most specific registry key first (credentialprovider.Keyring),
// as the kubelet's lookup. A secret that cannot be read is left out with
// the kubelet's FailedToRetrieveImagePullSecret event, and the pull goes
// on without it; one that is not valid docker config JSON fails the pull.
// (The ServiceAccount's imagePullSecrets are the pod's: its admission
// copied them into the pod at create, as upstream's.)
func (m *Manager) pullCredentials(ctx context.Context, pod *v1.Pod, image string) ([]credentialprovider.AuthConfig, error) {
	if m.opts.Client == nil || len(pod.Spec.ImagePullSecrets) == 0 {
		return nil, nil
	}
	var secrets []v1.Secret
	var failed []string
	for _, ref := range pod.Spec.ImagePullSecrets {
		if ref.Name == "" {
			// Validation lets empty names through (upstream ignores them).
			continue
		}
		s, err := m.opts.Client.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			klog.FromContext(ctx).Info("Unable to retrieve pull secret, the image pull may not succeed.", "pod", klog.KObj(pod), "secret", ref.Name, "err", err)
			failed = append(failed, ref.Name)
			continue
		}
		secrets = append(secrets, *s)
	}
	if len(failed) > 0 {
		m.events.Eventf(pod, v1.EventTypeWarning, "FailedToRetrieveImagePullSecret", "Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(failed, ", "))
	}
	keyring, err := credentialprovider.FromSecrets(secrets)
	if err != nil || keyring == nil {
		return nil, err
	}
	creds, _ := keyring.Lookup(credentialprovider.Repository(image))
	return creds, nil
}

// pullWith pulls image with each set of credentials in turn until one
// succeeds, or anonymously when there are none, as the kubelet's
// PullImage: the error of a pull that failed with every set is theirs
// together (one error is itself, several are "[e1, e2]").
func pullWith(ctx context.Context, is runtime.ImageService, image string, creds []credentialprovider.AuthConfig, sb *runtimeapi.PodSandboxConfig) error {
	if len(creds) == 0 {
		_, err := is.PullImage(ctx, image, nil, sb)
		return err
	}
	var errs []error
	for _, c := range creds {
		auth := &runtimeapi.AuthConfig{Username: c.Username, Password: c.Password, Auth: c.Auth, ServerAddress: c.ServerAddress,
			IdentityToken: c.IdentityToken, RegistryToken: c.RegistryToken}
		_, err := is.PullImage(ctx, image, auth, sb)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return utilerrors.NewAggregate(errs)
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
