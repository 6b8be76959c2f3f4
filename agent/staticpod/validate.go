package staticpod

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/kite-project/kite/apis/core/validation"
)

// validate checks a static pod as the API server would check it on create
// (apis/core/validation), plus the rule for static pods only: they exist
// without the API server, and their mirror pods may not refer to API objects
// (upstream's PreventStaticPodAPIReferences). It returns every problem found.
func validate(pod *v1.Pod) error {
	errs := []error{validation.ValidatePod(pod).ToAggregate()}
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	checkContainers := func(kind string, containers []v1.Container) {
		for i, c := range containers {
			path := fmt.Sprintf("spec.%s[%d]", kind, i)
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
	}
	checkContainers("initContainers", pod.Spec.InitContainers)
	checkContainers("containers", pod.Spec.Containers)
	for i, vol := range pod.Spec.Volumes {
		if ref := apiReference(vol.VolumeSource); ref != "" {
			add("spec.volumes[%d] %q: static pods may not reference %s", i, vol.Name, ref)
		}
	}
	if pod.Spec.ServiceAccountName != "" {
		add("spec.serviceAccountName %q: static pods may not reference serviceaccounts", pod.Spec.ServiceAccountName)
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
