package containerconfig

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

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
	if o := seLinuxOptions(pod, c); o != nil {
		sc.SelinuxOptions = &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
	}
	var err error
	if sc.Seccomp, err = seccompProfile(pod, c, in.SeccompProfileRoot); err != nil {
		return nil, err
	}
	if sc.Apparmor, sc.ApparmorProfile, err = appArmorProfile(pod, c); err != nil {
		return nil, err
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

// seccompProfile is the container's seccomp profile for the runtime, as the
// kubelet's getSeccompProfile with seccompDefault off: the container's
// field, else the pod's, else Unconfined. A Localhost profile is a file
// under root (<root-dir>/seccomp), named by its path relative to it.
func seccompProfile(pod *v1.Pod, c *v1.Container, root string) (*runtimeapi.SecurityProfile, error) {
	var p *v1.SeccompProfile
	switch {
	case c.SecurityContext != nil && c.SecurityContext.SeccompProfile != nil:
		p = c.SecurityContext.SeccompProfile
	case pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.SeccompProfile != nil:
		p = pod.Spec.SecurityContext.SeccompProfile
	default:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
	}
	switch p.Type {
	case v1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	case v1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
			return nil, errors.New("localhostProfile must be set if seccompProfile type is Localhost.")
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: filepath.Join(root, *p.LocalhostProfile)}, nil
	}
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
}

// appArmorProfile is the container's AppArmor profile, and the same in the
// deprecated string form older runtimes (containerd 1.6) read, as the
// kubelet's getAppArmorProfile: the container's field, else the pod's
// deprecated per-container annotation (static pods keep it), else the
// pod's field; none leaves the runtime's default.
func appArmorProfile(pod *v1.Pod, c *v1.Container) (*runtimeapi.SecurityProfile, string, error) {
	p := AppArmorProfile(pod, c)
	if p == nil {
		return nil, "", nil
	}
	switch p.Type {
	case v1.AppArmorProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, v1.DeprecatedAppArmorBetaProfileRuntimeDefault, nil
	case v1.AppArmorProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, v1.DeprecatedAppArmorBetaProfileNameUnconfined, nil
	case v1.AppArmorProfileTypeLocalhost:
		if p.LocalhostProfile == nil {
			return nil, "", errors.New("missing localhost apparmor profile name")
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: *p.LocalhostProfile},
			v1.DeprecatedAppArmorBetaProfileNamePrefix + *p.LocalhostProfile, nil
	}
	return nil, "", fmt.Errorf("unknown apparmor profile type: %q", p.Type)
}

// seLinuxOptions are the container's, else the pod's (upstream's
// DetermineEffectiveSecurityContext).
func seLinuxOptions(pod *v1.Pod, c *v1.Container) *v1.SELinuxOptions {
	if c.SecurityContext != nil && c.SecurityContext.SELinuxOptions != nil {
		return c.SecurityContext.SELinuxOptions
	}
	if pod.Spec.SecurityContext != nil {
		return pod.Spec.SecurityContext.SELinuxOptions
	}
	return nil
}

// AppArmorProfile is the AppArmor profile that applies to c (upstream's
// apparmor.GetProfile): its field, else the pod's deprecated annotation for
// it, else the pod's field; nil is none.
func AppArmorProfile(pod *v1.Pod, c *v1.Container) *v1.AppArmorProfile {
	if c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil {
		return c.SecurityContext.AppArmorProfile
	}
	if val, ok := pod.Annotations[v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+c.Name]; ok {
		switch {
		case val == v1.DeprecatedAppArmorBetaProfileRuntimeDefault:
			return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}
		case val == v1.DeprecatedAppArmorBetaProfileNameUnconfined:
			return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}
		case strings.HasPrefix(val, v1.DeprecatedAppArmorBetaProfileNamePrefix):
			name := strings.TrimPrefix(val, v1.DeprecatedAppArmorBetaProfileNamePrefix)
			return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}
		}
	}
	if pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.AppArmorProfile != nil {
		return pod.Spec.SecurityContext.AppArmorProfile
	}
	return nil
}

// AppArmorUnenforceable says why the node cannot run a pending pod's
// AppArmor profiles, as the kubelet's apparmor.Validate behind its
// admission handler (reason "AppArmor", "Cannot enforce AppArmor: <err>"):
// a profile other than unconfined on a node that cannot enforce one
// (hostErr says why; nil is a node that can), or a localhost profile with
// an empty name. Nil when the pod may run. The runtime would otherwise
// refuse every container of such a pod at create time (containerd:
// "apparmor is not supported"), and the pod would wait forever.
func AppArmorUnenforceable(pod *v1.Pod, hostErr error) error {
	if pod.Status.Phase != v1.PodPending && pod.Status.Phase != "" || !appArmorRequired(pod) {
		return nil
	}
	if hostErr != nil {
		return hostErr
	}
	for _, c := range allContainers(pod) {
		p := AppArmorProfile(pod, c)
		if p != nil && p.Type == v1.AppArmorProfileTypeLocalhost && (p.LocalhostProfile == nil || strings.TrimSpace(*p.LocalhostProfile) == "") {
			return fmt.Errorf("invalid empty AppArmor profile name: %q", p)
		}
	}
	return nil
}

// appArmorRequired says whether any profile of the pod confines (upstream's
// apparmor.isRequired): a pod or container field that is not Unconfined,
// or a deprecated annotation that is not "unconfined".
func appArmorRequired(pod *v1.Pod) bool {
	if sc := pod.Spec.SecurityContext; sc != nil && sc.AppArmorProfile != nil && sc.AppArmorProfile.Type != v1.AppArmorProfileTypeUnconfined {
		return true
	}
	for _, c := range allContainers(pod) {
		if sc := c.SecurityContext; sc != nil && sc.AppArmorProfile != nil && sc.AppArmorProfile.Type != v1.AppArmorProfileTypeUnconfined {
			return true
		}
	}
	for k, v := range pod.Annotations {
		if strings.HasPrefix(k, v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) && v != v1.DeprecatedAppArmorBetaProfileNameUnconfined {
			return true
		}
	}
	return false
}
