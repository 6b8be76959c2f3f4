package containerconfig

import (
	"slices"

	v1 "k8s.io/api/core/v1"
)

// References are the names of the configMaps and of the secrets of its
// namespace that the pod reads: through env, envFrom (of every kind of
// container) and its volumes, as upstream's VisitPodConfigmapNames and
// VisitPodSecretNames (image pull secrets aside: the agent pulls no
// image). Each list is sorted, without repeats.
func References(pod *v1.Pod) (configMaps, secrets []string) {
	visit := func(env []v1.EnvVar, from []v1.EnvFromSource) {
		for _, f := range from {
			if f.ConfigMapRef != nil {
				configMaps = append(configMaps, f.ConfigMapRef.Name)
			}
			if f.SecretRef != nil {
				secrets = append(secrets, f.SecretRef.Name)
			}
		}
		for _, e := range env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				configMaps = append(configMaps, r.Name)
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				secrets = append(secrets, r.Name)
			}
		}
	}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			visit(list[i].Env, list[i].EnvFrom)
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		visit(pod.Spec.EphemeralContainers[i].Env, pod.Spec.EphemeralContainers[i].EnvFrom)
	}
	for _, vol := range pod.Spec.Volumes {
		switch {
		case vol.ConfigMap != nil:
			configMaps = append(configMaps, vol.ConfigMap.Name)
		case vol.Secret != nil:
			secrets = append(secrets, vol.Secret.SecretName)
		case vol.Projected != nil:
			for _, src := range vol.Projected.Sources {
				if src.ConfigMap != nil {
					configMaps = append(configMaps, src.ConfigMap.Name)
				}
				if src.Secret != nil {
					secrets = append(secrets, src.Secret.Name)
				}
			}
		}
	}
	slices.Sort(configMaps)
	slices.Sort(secrets)
	return slices.Compact(configMaps), slices.Compact(secrets)
}
