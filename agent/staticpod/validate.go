package staticpod

import (
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// validate is the minimum the API server would refuse, checked here until
// the API server's own pod validation (apis/core/validation) can be called
// instead; then this function becomes a call to it plus the static-pod rule
// at the end. It returns every problem found, joined.
func validate(pod *v1.Pod) error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	for _, msg := range validation.IsDNS1123Subdomain(pod.Name) {
		add("metadata.name %q: %s", pod.Name, msg)
	}
	for _, msg := range validation.IsDNS1123Label(pod.Namespace) {
		add("metadata.namespace %q: %s", pod.Namespace, msg)
	}
	switch pod.Spec.RestartPolicy {
	case "", v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever:
	default:
		add("spec.restartPolicy %q: must be Always, OnFailure or Never", pod.Spec.RestartPolicy)
	}
	if len(pod.Spec.Containers) == 0 {
		add("spec.containers: at least one container is required")
	}

	names := map[string]string{} // container name → field path, across all kinds of containers
	checkContainer := func(path string, c *v1.Container) {
		if c.Name == "" {
			add("%s.name: required", path)
		} else {
			for _, msg := range validation.IsDNS1123Label(c.Name) {
				add("%s.name %q: %s", path, c.Name, msg)
			}
			if other, dup := names[c.Name]; dup {
				add("%s.name %q: duplicate of %s", path, c.Name, other)
			} else {
				names[c.Name] = path
			}
		}
		if strings.TrimSpace(c.Image) == "" {
			add("%s.image: required", path)
		}
		for j, ev := range c.EnvFrom {
			if ev.SecretRef != nil || ev.ConfigMapRef != nil {
				add("%s.envFrom[%d]: static pods may not reference secrets or configmaps", path, j)
			}
		}
		for j, e := range c.Env {
			if e.ValueFrom != nil && (e.ValueFrom.SecretKeyRef != nil || e.ValueFrom.ConfigMapKeyRef != nil) {
				add("%s.env[%d] %q: static pods may not reference secrets or configmaps", path, j, e.Name)
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		checkContainer(fmt.Sprintf("spec.initContainers[%d]", i), &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		checkContainer(fmt.Sprintf("spec.containers[%d]", i), &pod.Spec.Containers[i])
	}

	volumes := map[string]bool{}
	for i, vol := range pod.Spec.Volumes {
		path := fmt.Sprintf("spec.volumes[%d]", i)
		for _, msg := range validation.IsDNS1123Label(vol.Name) {
			add("%s.name %q: %s", path, vol.Name, msg)
		}
		if volumes[vol.Name] {
			add("%s.name %q: duplicate volume name", path, vol.Name)
		}
		volumes[vol.Name] = true
		if ref := apiReference(vol.VolumeSource); ref != "" {
			add("%s %q: static pods may not reference %s", path, vol.Name, ref)
		}
	}
	if len(pod.Spec.ResourceClaims) > 0 {
		add("spec.resourceClaims: static pods may not reference resourceclaims")
	}
	return errors.Join(errs...)
}

// apiReference names the API objects a volume refers to, if any: a static
// pod exists without the API server and its mirror pod may not refer to
// them (upstream's PreventStaticPodAPIReferences).
func apiReference(vs v1.VolumeSource) string {
	switch {
	case vs.Secret != nil:
		return "secrets"
	case vs.ConfigMap != nil:
		return "configmaps"
	case vs.PersistentVolumeClaim != nil:
		return "persistentvolumeclaims"
	case vs.Ephemeral != nil:
		return "persistentvolumeclaims (ephemeral volume)"
	case vs.Projected != nil:
		for _, s := range vs.Projected.Sources {
			switch {
			case s.Secret != nil:
				return "secrets"
			case s.ConfigMap != nil:
				return "configmaps"
			case s.ServiceAccountToken != nil:
				return "serviceaccounts"
			case s.ClusterTrustBundle != nil:
				return "clustertrustbundles"
			}
		}
	}
	return ""
}
