package podsync

import (
	"context"
	"errors"
	"fmt"
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
	creds, err := m.pullCredentials(ctx, pod, c.Image)
	if err != nil {
		return nil, &imageError{podactions.ReasonErrImagePull, err.Error()}
	}
	m.events.ContainerEventf(pod, c.Name, v1.EventTypeNormal, "Pulling", "Pulling image %q", c.Image)
	start := time.Now()
	err = pullWith(ctx, is, c.Image, creds, sb)
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
