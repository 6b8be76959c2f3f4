package builtin

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// defaultPod applies upstream's v1 defaults for the pod fields users set
// (pkg/apis/core/v1/defaults.go), and what the ServiceAccount admission
// plugin fills in.
func defaultPod(pod *v1.Pod) {
	s := &pod.Spec
	if s.RestartPolicy == "" {
		s.RestartPolicy = v1.RestartPolicyAlways
	}
	if s.DNSPolicy == "" {
		s.DNSPolicy = v1.DNSClusterFirst
	}
	if s.SchedulerName == "" {
		s.SchedulerName = v1.DefaultSchedulerName
	}
	if s.TerminationGracePeriodSeconds == nil {
		grace := int64(v1.DefaultTerminationGracePeriodSeconds)
		s.TerminationGracePeriodSeconds = &grace
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &v1.PodSecurityContext{}
	}
	if s.EnableServiceLinks == nil {
		enable := v1.DefaultEnableServiceLinks
		s.EnableServiceLinks = &enable
	}
	if s.ServiceAccountName == "" {
		s.ServiceAccountName = "default"
	}
	if s.DeprecatedServiceAccount == "" {
		s.DeprecatedServiceAccount = s.ServiceAccountName
	}
	if s.Priority == nil {
		zero := int32(0)
		s.Priority = &zero
	}
	if s.PreemptionPolicy == nil {
		policy := v1.PreemptLowerPriority
		s.PreemptionPolicy = &policy
	}
	for i := range s.InitContainers {
		defaultContainer(&s.InitContainers[i])
	}
	for i := range s.Containers {
		defaultContainer(&s.Containers[i])
	}
}

func defaultContainer(c *v1.Container) {
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = v1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	}
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = v1.PullIfNotPresent
		if tag := imageTag(c.Image); tag == "" || tag == "latest" {
			c.ImagePullPolicy = v1.PullAlways
		}
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = v1.ProtocolTCP
		}
	}
}

// imageTag returns the tag of an image reference, "" when it has none (a
// digest counts as a tag).
func imageTag(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		return image[i+1:]
	}
	slash := strings.LastIndex(image, "/")
	if i := strings.LastIndex(image, ":"); i > slash {
		return image[i+1:]
	}
	return ""
}

// validatePod is the part of upstream's ValidatePodCreate that users meet
// first: containers, names, images, ports, restartPolicy.
func validatePod(pod *v1.Pod) field.ErrorList {
	spec := field.NewPath("spec")
	errs := field.ErrorList{}
	switch pod.Spec.RestartPolicy {
	case v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever:
	default:
		errs = append(errs, field.NotSupported(spec.Child("restartPolicy"), pod.Spec.RestartPolicy,
			[]string{string(v1.RestartPolicyAlways), string(v1.RestartPolicyOnFailure), string(v1.RestartPolicyNever)}))
	}
	if len(pod.Spec.Containers) == 0 {
		errs = append(errs, field.Required(spec.Child("containers"), ""))
	}
	names := map[string]bool{}
	errs = append(errs, validateContainers(pod.Spec.InitContainers, spec.Child("initContainers"), names)...)
	errs = append(errs, validateContainers(pod.Spec.Containers, spec.Child("containers"), names)...)
	if pod.Spec.NodeName != "" {
		for _, msg := range validation.IsDNS1123Subdomain(pod.Spec.NodeName) {
			errs = append(errs, field.Invalid(spec.Child("nodeName"), pod.Spec.NodeName, msg))
		}
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, apivalidation.ValidateNonnegativeField(*g, spec.Child("terminationGracePeriodSeconds"))...)
	}
	return errs
}

func validateContainers(containers []v1.Container, path *field.Path, names map[string]bool) field.ErrorList {
	errs := field.ErrorList{}
	for i, c := range containers {
		p := path.Index(i)
		switch {
		case c.Name == "":
			errs = append(errs, field.Required(p.Child("name"), ""))
		case names[c.Name]:
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		default:
			for _, msg := range validation.IsDNS1123Label(c.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), c.Name, msg))
			}
		}
		names[c.Name] = true
		if strings.TrimSpace(c.Image) == "" {
			errs = append(errs, field.Required(p.Child("image"), ""))
		} else if c.Image != strings.TrimSpace(c.Image) {
			errs = append(errs, field.Invalid(p.Child("image"), c.Image, "must not have leading or trailing whitespace"))
		}
		for j, port := range c.Ports {
			pp := p.Child("ports").Index(j)
			for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
				errs = append(errs, field.Invalid(pp.Child("containerPort"), port.ContainerPort, msg))
			}
			if port.HostPort != 0 {
				for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
					errs = append(errs, field.Invalid(pp.Child("hostPort"), port.HostPort, msg))
				}
			}
			switch port.Protocol {
			case v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP:
			default:
				errs = append(errs, field.NotSupported(pp.Child("protocol"), port.Protocol, []string{"SCTP", "TCP", "UDP"}))
			}
		}
		for name, q := range c.Resources.Requests {
			if q.Sign() < 0 {
				errs = append(errs, field.Invalid(p.Child("resources", "requests").Key(string(name)), q.String(), "must be greater than or equal to 0"))
			}
			if lim, ok := c.Resources.Limits[name]; ok && q.Cmp(lim) > 0 {
				errs = append(errs, field.Invalid(p.Child("resources", "requests").Key(string(name)), q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, lim.String())))
			}
		}
		for name, q := range c.Resources.Limits {
			if q.Sign() < 0 {
				errs = append(errs, field.Invalid(p.Child("resources", "limits").Key(string(name)), q.String(), "must be greater than or equal to 0"))
			}
		}
	}
	return errs
}

// podSpecUpdateMessage is upstream's message for a forbidden pod update.
const podSpecUpdateMessage = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"

// validatePodUpdate allows only upstream's mutable pod spec fields to change.
func validatePodUpdate(obj, old runtime.Object) field.ErrorList {
	pod, oldPod := obj.(*v1.Pod), old.(*v1.Pod)
	errs := validatePod(pod)
	mutated := oldPod.Spec.DeepCopy()
	if len(mutated.Containers) == len(pod.Spec.Containers) {
		for i := range mutated.Containers {
			mutated.Containers[i].Image = pod.Spec.Containers[i].Image
		}
	}
	if len(mutated.InitContainers) == len(pod.Spec.InitContainers) {
		for i := range mutated.InitContainers {
			mutated.InitContainers[i].Image = pod.Spec.InitContainers[i].Image
		}
	}
	mutated.ActiveDeadlineSeconds = pod.Spec.ActiveDeadlineSeconds
	if len(pod.Spec.Tolerations) >= len(mutated.Tolerations) {
		mutated.Tolerations = pod.Spec.Tolerations
	}
	if !apiequality.Semantic.DeepEqual(*mutated, pod.Spec) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), podSpecUpdateMessage))
	}
	return errs
}

// validatePodStatusUpdate checks the status fields a status writer sets.
func validatePodStatusUpdate(obj, old runtime.Object) field.ErrorList {
	pod := obj.(*v1.Pod)
	errs := field.ErrorList{}
	switch pod.Status.Phase {
	case "", v1.PodPending, v1.PodRunning, v1.PodSucceeded, v1.PodFailed, v1.PodUnknown:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("status", "phase"), pod.Status.Phase,
			[]string{"Failed", "Pending", "Running", "Succeeded", "Unknown"}))
	}
	return errs
}
