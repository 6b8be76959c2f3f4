package containerconfig

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// securityContext is the container's effective security context for the
// runtime, as the kubelet's determineEffectiveSecurityContext: the
// container's fields over the pod's; supplemental groups (with fsGroup)
// from the pod. A runAsNonRoot the agent cannot honour is an error with
// upstream's message (verifyRunAsNonRoot): the process runtime has no
// image user to fall back on, so an unset runAsUser would be root.
//
// A runtime that runs images (in.RunsImages) falls back on the image's
// user instead: root when the image names none, an error when it names a
// user by name only, as the kubelet cannot verify that.
func securityContext(pod *v1.Pod, c *v1.Container, in Inputs) (*runtimeapi.LinuxContainerSecurityContext, error) {
	sc := &runtimeapi.LinuxContainerSecurityContext{}
	var runAsNonRoot *bool
	if p := pod.Spec.SecurityContext; p != nil {
		sc.RunAsUser, sc.RunAsGroup, sc.SupplementalGroups = podIDs(p)
		runAsNonRoot = p.RunAsNonRoot
	}
	if s := c.SecurityContext; s != nil {
		if s.RunAsUser != nil {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: *s.RunAsUser}
		}
		if s.RunAsGroup != nil {
			sc.RunAsGroup = &runtimeapi.Int64Value{Value: *s.RunAsGroup}
		}
		if s.RunAsNonRoot != nil {
			runAsNonRoot = s.RunAsNonRoot
		}
		if s.Privileged != nil {
			sc.Privileged = *s.Privileged
		}
		if s.ReadOnlyRootFilesystem != nil {
			sc.ReadonlyRootfs = *s.ReadOnlyRootFilesystem
		}
		if s.AllowPrivilegeEscalation != nil {
			sc.NoNewPrivs = !*s.AllowPrivilegeEscalation
		}
		if caps := s.Capabilities; caps != nil {
			sc.Capabilities = &runtimeapi.Capability{}
			for _, a := range caps.Add {
				sc.Capabilities.AddCapabilities = append(sc.Capabilities.AddCapabilities, string(a))
			}
			for _, d := range caps.Drop {
				sc.Capabilities.DropCapabilities = append(sc.Capabilities.DropCapabilities, string(d))
			}
		}
	}
	if runAsNonRoot != nil && *runAsNonRoot {
		img := in.ImageUser
		if img == nil {
			img = &ImageUser{UID: new(int64)} // no user: root
		}
		switch {
		case sc.RunAsUser == nil && in.RunsImages && img.UID == nil && img.Name != "":
			return nil, fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", img.Name, pod.Name+"_"+pod.Namespace+"("+string(pod.UID)+")", c.Name)
		case sc.RunAsUser == nil && in.RunsImages && img.UID != nil && *img.UID != 0:
		case sc.RunAsUser == nil:
			return nil, fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", pod.Name+"_"+pod.Namespace+"("+string(pod.UID)+")", c.Name)
		case sc.RunAsUser.Value == 0:
			return nil, fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", pod.Name+"_"+pod.Namespace+"("+string(pod.UID)+")", c.Name)
		}
	}
	return sc, nil
}

// ImageUser is the user an image runs as: a numeric UID, or a name only.
type ImageUser struct {
	UID  *int64
	Name string
}

// podIDs are the pod's user, group and supplemental groups (fsGroup
// last), as the sandbox and every container get them.
func podIDs(p *v1.PodSecurityContext) (user, group *runtimeapi.Int64Value, groups []int64) {
	if p.RunAsUser != nil {
		user = &runtimeapi.Int64Value{Value: *p.RunAsUser}
	}
	if p.RunAsGroup != nil {
		group = &runtimeapi.Int64Value{Value: *p.RunAsGroup}
	}
	groups = append(groups, p.SupplementalGroups...)
	if p.FSGroup != nil {
		groups = append(groups, *p.FSGroup)
	}
	return user, group, groups
}
