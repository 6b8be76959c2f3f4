package containerconfig

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Env is the container's environment with every reference resolved, as
// upstream's makeEnvironmentVariables: envFrom first (later sources win),
// then env in order, each value expanding $(VAR) of the variables before
// it. A missing configMap, secret or key that is not optional is an error
// with upstream's message; the container must not start. The configMaps
// and secrets are in's. The Services' variables (ServiceEnv of
// in.Services) come last, but those the container sets itself, and
// $(VAR) expands them too, as upstream's.
func Env(pod *v1.Pod, c *v1.Container, in Inputs) ([]EnvVar, error) {
	vars := map[string]string{}
	services := ServiceEnv(pod.Namespace, enableServiceLinks(pod), in.Services)
	serviceVars := make(map[string]string, len(services))
	for _, e := range services {
		serviceVars[e.Name] = e.Value
	}
	mapping := func(name string) string {
		if v, ok := vars[name]; ok {
			return v
		}
		if v, ok := serviceVars[name]; ok {
			return v
		}
		return "$(" + name + ")"
	}
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			ref := from.ConfigMapRef
			cm, err := in.configMap(ref.Name)
			if err != nil {
				if ref.Optional != nil && *ref.Optional && apierrors.IsNotFound(err) {
					continue
				}
				return nil, err
			}
			for _, k := range sortedKeys(cm.Data) {
				if name := from.Prefix + k; validEnvName(name) {
					set(name, cm.Data[k])
				}
			}
		case from.SecretRef != nil:
			ref := from.SecretRef
			s, err := in.secret(ref.Name)
			if err != nil {
				if ref.Optional != nil && *ref.Optional && apierrors.IsNotFound(err) {
					continue
				}
				return nil, err
			}
			for _, k := range sortedKeys(s.Data) {
				if name := from.Prefix + k; validEnvName(name) {
					set(name, string(s.Data[k]))
				}
			}
		}
	}

	for _, e := range c.Env {
		val := e.Value
		switch {
		case val != "":
			val = Expand(val, mapping)
		case e.ValueFrom == nil:
		case e.ValueFrom.FieldRef != nil:
			v, err := fieldValue(e.ValueFrom.FieldRef.FieldPath, pod, in.HostIPs, in.podIPs(pod), false)
			if err != nil {
				return nil, err
			}
			val = v
		case e.ValueFrom.ResourceFieldRef != nil:
			v, err := resourceValue(e.ValueFrom.ResourceFieldRef, pod, c, in.Allocatable)
			if err != nil {
				return nil, err
			}
			val = v
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			optional := ref.Optional != nil && *ref.Optional
			cm, err := in.configMap(ref.Name)
			if err != nil {
				if optional && apierrors.IsNotFound(err) {
					continue
				}
				return nil, err
			}
			v, ok := cm.Data[ref.Key]
			if !ok {
				if optional {
					continue
				}
				return nil, fmt.Errorf("couldn't find key %v in ConfigMap %v/%v", ref.Key, pod.Namespace, ref.Name)
			}
			val = v
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			optional := ref.Optional != nil && *ref.Optional
			s, err := in.secret(ref.Name)
			if err != nil {
				if optional && apierrors.IsNotFound(err) {
					continue
				}
				return nil, err
			}
			v, ok := s.Data[ref.Key]
			if !ok {
				if optional {
					continue
				}
				return nil, fmt.Errorf("couldn't find key %v in Secret %v/%v", ref.Key, pod.Namespace, ref.Name)
			}
			val = string(v)
		default:
			return nil, fmt.Errorf("env %s: unsupported valueFrom", e.Name)
		}
		set(e.Name, val)
	}
	out := make([]EnvVar, 0, len(order)+len(services))
	for _, k := range order {
		out = append(out, EnvVar{Name: k, Value: vars[k]})
	}
	for _, e := range services {
		if _, ok := vars[e.Name]; !ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// EnvVar is one variable of a container's environment.
type EnvVar struct{ Name, Value string }

func validEnvName(s string) bool { return s != "" && !strings.Contains(s, "=") }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// fieldValue is the value of a fieldRef, as upstream's
// podFieldSelectorRuntimeValue and fieldpath.ExtractFieldPathAsString.
// Whole label and annotation maps are only for downwardAPI volumes
// (volume true); env takes single keys.
func fieldValue(path string, pod *v1.Pod, hostIPs, podIPs []string, volume bool) (string, error) {
	switch path {
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		return firstOf(hostIPs), nil
	case "status.podIP":
		return firstOf(podIPs), nil
	case "status.hostIPs":
		return strings.Join(hostIPs, ","), nil
	case "status.podIPs":
		return strings.Join(podIPs, ","), nil
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		if volume {
			return formatMap(pod.Labels), nil
		}
	case "metadata.annotations":
		if volume {
			return formatMap(pod.Annotations), nil
		}
	}
	if k, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[k], nil
	}
	if k, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[k], nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %v", path)
}

// subscript is k of "<prefix>['k']".
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "']")
}

// formatMap is upstream's fieldpath.FormatMap: sorted k="v" lines.
func formatMap(m map[string]string) string {
	var l strings.Builder
	for _, k := range sortedKeys(m) {
		fmt.Fprintf(&l, "%v=%q\n", k, m[k])
	}
	return strings.TrimSuffix(l.String(), "\n")
}

// resourceValue is a resourceFieldRef's value, with limits that are not
// set defaulting to the node's allocatable, as upstream's
// defaultPodLimitsForDownwardAPI and ExtractContainerResourceValue.
func resourceValue(ref *v1.ResourceFieldSelector, pod *v1.Pod, c *v1.Container, allocatable v1.ResourceList) (string, error) {
	if ref.ContainerName != "" && ref.ContainerName != c.Name {
		c = nil
		for i := range pod.Spec.Containers {
			if pod.Spec.Containers[i].Name == ref.ContainerName {
				c = &pod.Spec.Containers[i]
			}
		}
		for i := range pod.Spec.InitContainers {
			if pod.Spec.InitContainers[i].Name == ref.ContainerName {
				c = &pod.Spec.InitContainers[i]
			}
		}
		if c == nil {
			return "", fmt.Errorf("container %s not found", ref.ContainerName)
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	limit := func(name v1.ResourceName) resource.Quantity {
		if q, ok := c.Resources.Limits[name]; ok {
			return q
		}
		return allocatable[name]
	}
	request := func(name v1.ResourceName) resource.Quantity { return c.Resources.Requests[name] }
	cpu := func(q resource.Quantity) string {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10)
	}
	bytes := func(q resource.Quantity) string {
		return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10)
	}
	switch ref.Resource {
	case "limits.cpu":
		return cpu(limit(v1.ResourceCPU)), nil
	case "limits.memory":
		return bytes(limit(v1.ResourceMemory)), nil
	case "limits.ephemeral-storage":
		return bytes(limit(v1.ResourceEphemeralStorage)), nil
	case "requests.cpu":
		return cpu(request(v1.ResourceCPU)), nil
	case "requests.memory":
		return bytes(request(v1.ResourceMemory)), nil
	case "requests.ephemeral-storage":
		return bytes(request(v1.ResourceEphemeralStorage)), nil
	}
	return "", fmt.Errorf("unsupported container resource : %v", ref.Resource)
}

func firstOf(ips []string) string {
	if len(ips) == 0 {
		return ""
	}
	return ips[0]
}

// podIPs are the pod's addresses for the downward API: its sandbox's
// (PodIPs) when it has a network of its own, else the node's.
func (in Inputs) podIPs(pod *v1.Pod) []string {
	if in.PodNetwork && !pod.Spec.HostNetwork {
		return in.PodIPs
	}
	return in.HostIPs
}
