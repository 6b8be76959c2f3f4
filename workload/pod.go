package workload

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// sentAnnotation carries the time (Unix nanoseconds) a fan-out update
// was started, so that a watcher can tell how long delivery took.
const sentAnnotation = "bench.kite.io/sent"

// newPod is pod i: a small pod of one container with labels, env and
// resources, already bound to its node (the "small pod" of the
// performance anchors, about 1.3 KB of JSON). It asks for no
// ServiceAccount token: the ServiceAccount admission of a server that
// runs it would add a projected volume and a mount to every container
// (half a kilobyte more), and the reference server of the side-by-side
// runs, with no admission plugins, would not, so the two would store
// different pods.
func (o Options) newPod(i int) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      podName(i),
			Namespace: o.Namespace,
			Labels:    map[string]string{"app": "kite-bench", "tier": "backend", "shard": podName(i % 16)},
		},
		Spec: v1.PodSpec{
			NodeName:                      o.nodeName(i),
			AutomountServiceAccountToken:  new(false),
			RestartPolicy:                 v1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: new(int64(30)),
			Containers: []v1.Container{{
				Name:  "app",
				Image: "registry.k8s.io/pause:3.10",
				Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: v1.ProtocolTCP}},
				Env: []v1.EnvVar{
					{Name: "MODE", Value: "bench"},
					{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				},
				Resources: v1.ResourceRequirements{
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m"), v1.ResourceMemory: resource.MustParse("16Mi")},
					Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")},
				},
			}},
		},
	}
}
