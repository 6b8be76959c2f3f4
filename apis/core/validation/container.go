package validation

import (
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedPortProtocols = []corev1.Protocol{corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP}

// validateContainers checks the regular containers: at least one, unique
// names, the checks common to all containers, probes and lifecycle, and host
// port conflicts across all of them (they run side by side).
func validateContainers(containers []corev1.Container, vols map[string]corev1.VolumeSource, grace *int64, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(containers) == 0 {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	names := map[string]bool{}
	for i := range containers {
		ctr := &containers[i]
		path := fldPath.Index(i)
		allErrs = append(allErrs, validateContainerCommon(ctr, vols, path)...)
		if names[ctr.Name] {
			allErrs = append(allErrs, field.Duplicate(path.Child("name"), ctr.Name))
		} else {
			names[ctr.Name] = true
		}
		allErrs = append(allErrs, validateLifecycle(ctr.Lifecycle, grace, path.Child("lifecycle"))...)
		allErrs = append(allErrs, validateLivenessProbe(ctr.LivenessProbe, path.Child("livenessProbe"))...)
		allErrs = append(allErrs, validateReadinessProbe(ctr.ReadinessProbe, path.Child("readinessProbe"))...)
		allErrs = append(allErrs, validateLivenessProbe(ctr.StartupProbe, path.Child("startupProbe"))...)
		if ctr.RestartPolicy != nil {
			allErrs = append(allErrs, field.Forbidden(path.Child("restartPolicy"), "may not be set for non-init containers"))
		}
	}
	allErrs = append(allErrs, checkHostPortConflicts(containers, fldPath)...)
	return allErrs
}

// validateInitContainers checks init containers: names unique among init
// and regular containers; probes and lifecycle only for restartable
// (sidecar) init containers; host ports checked per container, since init
// containers run one at a time.
func validateInitContainers(containers, regular []corev1.Container, vols map[string]corev1.VolumeSource, grace *int64, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := map[string]bool{}
	for _, ctr := range regular {
		names[ctr.Name] = true
	}
	for i := range containers {
		ctr := &containers[i]
		path := fldPath.Index(i)
		allErrs = append(allErrs, validateContainerCommon(ctr, vols, path)...)
		restartAlways := false
		if ctr.RestartPolicy != nil {
			if *ctr.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				restartAlways = true
			} else {
				allErrs = append(allErrs, field.NotSupported(path.Child("restartPolicy"), *ctr.RestartPolicy, []corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways}))
			}
		}
		if names[ctr.Name] {
			allErrs = append(allErrs, field.Duplicate(path.Child("name"), ctr.Name))
		} else if ctr.Name != "" {
			names[ctr.Name] = true
		}
		// Upstream checks each init container alone and reports it at index 0.
		allErrs = append(allErrs, checkHostPortConflicts([]corev1.Container{*ctr}, fldPath)...)
		if restartAlways {
			allErrs = append(allErrs, validateLifecycle(ctr.Lifecycle, grace, path.Child("lifecycle"))...)
			allErrs = append(allErrs, validateLivenessProbe(ctr.LivenessProbe, path.Child("livenessProbe"))...)
			allErrs = append(allErrs, validateReadinessProbe(ctr.ReadinessProbe, path.Child("readinessProbe"))...)
			allErrs = append(allErrs, validateLivenessProbe(ctr.StartupProbe, path.Child("startupProbe"))...)
		} else {
			const msg = "may not be set for init containers without restartPolicy=Always"
			if ctr.Lifecycle != nil {
				allErrs = append(allErrs, field.Forbidden(path.Child("lifecycle"), msg))
			}
			if ctr.LivenessProbe != nil {
				allErrs = append(allErrs, field.Forbidden(path.Child("livenessProbe"), msg))
			}
			if ctr.ReadinessProbe != nil {
				allErrs = append(allErrs, field.Forbidden(path.Child("readinessProbe"), msg))
			}
			if ctr.StartupProbe != nil {
				allErrs = append(allErrs, field.Forbidden(path.Child("startupProbe"), msg))
			}
		}
		if len(ctr.ResizePolicy) > 0 {
			allErrs = append(allErrs, field.Invalid(path.Child("resizePolicy"), ctr.ResizePolicy, "must not be set for init containers"))
		}
	}
	return allErrs
}

// validateEphemeralContainers checks the common rules, unique names
// across all container kinds, an existing target container, and the fields
// an ephemeral container may not have (ports, resources, probes, lifecycle,
// subPath mounts).
func validateEphemeralContainers(containers []corev1.EphemeralContainer, regular, init []corev1.Container, vols map[string]corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := map[string]bool{}
	for _, c := range regular {
		names[c.Name] = true
	}
	for _, c := range init {
		names[c.Name] = true
	}
	targets := maps.Clone(names)
	for i := range containers {
		path := fldPath.Index(i)
		ctr := (*corev1.Container)(&containers[i].EphemeralContainerCommon)
		allErrs = append(allErrs, validateContainerCommon(ctr, vols, path)...)
		if len(ctr.Image) != len(strings.TrimSpace(ctr.Image)) {
			allErrs = append(allErrs, field.Invalid(path.Child("image"), ctr.Image, "must not have leading or trailing whitespace"))
		}
		if names[ctr.Name] {
			allErrs = append(allErrs, field.Duplicate(path.Child("name"), ctr.Name))
		} else {
			names[ctr.Name] = true
		}
		if t := containers[i].TargetContainerName; t != "" && !targets[t] {
			allErrs = append(allErrs, field.NotFound(path.Child("targetContainerName"), t))
		}
		const msg = "cannot be set for an Ephemeral Container"
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"ports", len(ctr.Ports) > 0},
			{"resources", !equality.Semantic.DeepEqual(ctr.Resources, corev1.ResourceRequirements{})},
			{"resizePolicy", len(ctr.ResizePolicy) > 0},
			{"restartPolicy", ctr.RestartPolicy != nil},
			{"lifecycle", ctr.Lifecycle != nil},
			{"livenessProbe", ctr.LivenessProbe != nil},
			{"readinessProbe", ctr.ReadinessProbe != nil},
			{"startupProbe", ctr.StartupProbe != nil},
		} {
			if f.set {
				allErrs = append(allErrs, field.Forbidden(path.Child(f.name), msg))
			}
		}
		for j, m := range ctr.VolumeMounts {
			if m.SubPath != "" {
				allErrs = append(allErrs, field.Forbidden(path.Child("volumeMounts").Index(j).Child("subPath"), msg))
			}
			if m.SubPathExpr != "" {
				allErrs = append(allErrs, field.Forbidden(path.Child("volumeMounts").Index(j).Child("subPathExpr"), msg))
			}
		}
	}
	return allErrs
}

// validateContainerCommon holds the checks every kind of container gets.
func validateContainerCommon(ctr *corev1.Container, vols map[string]corev1.VolumeSource, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	namePath := path.Child("name")
	if ctr.Name == "" {
		allErrs = append(allErrs, field.Required(namePath, ""))
	} else {
		allErrs = append(allErrs, validateDNS1123Label(ctr.Name, namePath)...)
	}
	// Leading and trailing whitespace is checked for pods only
	// (validateImageWhitespace), as upstream does for compatibility.
	if ctr.Image == "" {
		allErrs = append(allErrs, field.Required(path.Child("image"), ""))
	}
	switch ctr.TerminationMessagePolicy {
	case corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError:
	case "":
		allErrs = append(allErrs, field.Required(path.Child("terminationMessagePolicy"), ""))
	default:
		valid := []corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError}
		allErrs = append(allErrs, field.NotSupported(path.Child("terminationMessagePolicy"), ctr.TerminationMessagePolicy, valid))
	}
	allErrs = append(allErrs, validateContainerPorts(ctr.Ports, path.Child("ports"))...)
	allErrs = append(allErrs, validateEnv(ctr.Env, path.Child("env"))...)
	allErrs = append(allErrs, validateEnvFrom(ctr.EnvFrom, path.Child("envFrom"))...)
	allErrs = append(allErrs, validateVolumeMounts(ctr.VolumeMounts, ctr, vols, path.Child("volumeMounts"))...)
	allErrs = append(allErrs, validatePullPolicy(ctr.ImagePullPolicy, path.Child("imagePullPolicy"))...)
	allErrs = append(allErrs, validateResourceRequirements(&ctr.Resources, path.Child("resources"))...)
	allErrs = append(allErrs, validateSecurityContext(ctr.SecurityContext, path.Child("securityContext"))...)
	return allErrs
}

func validatePullPolicy(policy corev1.PullPolicy, fldPath *field.Path) field.ErrorList {
	switch policy {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	default:
		valid := []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}
		return field.ErrorList{field.NotSupported(fldPath, policy, valid)}
	}
}

func validateContainerPorts(ports []corev1.ContainerPort, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := map[string]bool{}
	for i, port := range ports {
		idxPath := fldPath.Index(i)
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) != 0 {
				for _, msg := range msgs {
					allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), port.Name, msg))
				}
			} else if names[port.Name] {
				allErrs = append(allErrs, field.Duplicate(idxPath.Child("name"), port.Name))
			} else {
				names[port.Name] = true
			}
		}
		if port.ContainerPort == 0 {
			allErrs = append(allErrs, field.Required(idxPath.Child("containerPort"), ""))
		} else {
			for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("hostPort"), port.HostPort, msg))
			}
		}
		allErrs = append(allErrs, validateProtocol(port.Protocol, idxPath.Child("protocol"))...)
	}
	return allErrs
}

func validateProtocol(p corev1.Protocol, fldPath *field.Path) field.ErrorList {
	if p == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	for _, ok := range supportedPortProtocols {
		if p == ok {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(fldPath, p, supportedPortProtocols)}
}

// checkHostPortConflicts reports a host port (with its protocol and host
// IP) used twice among containers that run at the same time.
func checkHostPortConflicts(containers []corev1.Container, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := map[string]bool{}
	for ci, ctr := range containers {
		portsPath := fldPath.Index(ci).Child("ports")
		for pi, p := range ctr.Ports {
			if p.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", p.Protocol, p.HostIP, p.HostPort)
			if seen[key] {
				allErrs = append(allErrs, field.Duplicate(portsPath.Index(pi).Child("hostPort"), key))
			} else {
				seen[key] = true
			}
		}
	}
	return allErrs
}
