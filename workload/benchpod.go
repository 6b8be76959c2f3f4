package workload

import (
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The custom resource of the comparison: a BenchPod carries what a stored
// bench pod carries (its spec with the server's defaults written out, and
// a status), so that a custom resource and a built-in pod of the same size
// are compared.
var benchPods = schema.GroupVersionResource{Group: "bench.kite.io", Version: "v1", Resource: "benchpods"}

const benchPodKind = "BenchPod"

// benchPodCRDName is the CRD's name, plural.group.
func benchPodCRDName() string { return benchPods.Resource + "." + benchPods.Group }

// benchPodCRD is the CRD of BenchPods: namespaced, one version, a
// structural schema of every field (list types and map keys as the pod's,
// so managedFields are alike), enums where the pod's API has them, and
// spec.nodeName selectable, as a pod's is.
func benchPodCRD() *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	integer := apiextensionsv1.JSONSchemaProps{Type: "integer"}
	enum := func(values ...string) apiextensionsv1.JSONSchemaProps {
		p := apiextensionsv1.JSONSchemaProps{Type: "string"}
		for _, v := range values {
			p.Enum = append(p.Enum, apiextensionsv1.JSON{Raw: []byte(fmt.Sprintf("%q", v))})
		}
		return p
	}
	object := func(props map[string]apiextensionsv1.JSONSchemaProps, required ...string) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props, Required: required}
	}
	mapList := func(item apiextensionsv1.JSONSchemaProps, keys ...string) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{
			Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &item},
			XListType: new("map"), XListMapKeys: keys,
		}
	}
	quantity := apiextensionsv1.JSONSchemaProps{XIntOrString: true, AnyOf: []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}}}
	resources := apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &quantity}}
	tcp := apiextensionsv1.JSON{Raw: []byte(`"TCP"`)}
	protocol := enum("TCP", "UDP", "SCTP")
	protocol.Default = &tcp
	container := object(map[string]apiextensionsv1.JSONSchemaProps{
		"name": str, "image": str,
		"imagePullPolicy":          enum("Always", "Never", "IfNotPresent"),
		"terminationMessagePath":   str,
		"terminationMessagePolicy": enum("File", "FallbackToLogsOnError"),
		"ports": mapList(object(map[string]apiextensionsv1.JSONSchemaProps{
			"name": str, "containerPort": integer, "protocol": protocol,
		}, "containerPort"), "containerPort", "protocol"),
		"env": mapList(object(map[string]apiextensionsv1.JSONSchemaProps{
			"name": str, "value": str,
			"valueFrom": object(map[string]apiextensionsv1.JSONSchemaProps{
				"fieldRef": object(map[string]apiextensionsv1.JSONSchemaProps{"apiVersion": str, "fieldPath": str}, "fieldPath"),
			}),
		}, "name"), "name"),
		"resources": object(map[string]apiextensionsv1.JSONSchemaProps{"limits": resources, "requests": resources}),
	}, "name", "image")
	toleration := object(map[string]apiextensionsv1.JSONSchemaProps{
		"key": str, "operator": enum("Exists", "Equal"), "value": str,
		"effect": enum("NoSchedule", "PreferNoSchedule", "NoExecute"), "tolerationSeconds": integer,
	})
	spec := object(map[string]apiextensionsv1.JSONSchemaProps{
		"containers":                    mapList(container, "name"),
		"restartPolicy":                 enum("Always", "OnFailure", "Never"),
		"terminationGracePeriodSeconds": integer,
		"dnsPolicy":                     enum("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"),
		"serviceAccountName":            str,
		"serviceAccount":                str,
		"nodeName":                      str,
		"securityContext":               {Type: "object"},
		"schedulerName":                 str,
		"tolerations":                   {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &toleration}},
		"enableServiceLinks":            {Type: "boolean"},
		"automountServiceAccountToken":  {Type: "boolean"},
	}, "containers")
	status := object(map[string]apiextensionsv1.JSONSchemaProps{"phase": str, "qosClass": str})
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: benchPodCRDName()},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: benchPods.Group,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: benchPods.Resource, Singular: "benchpod", Kind: benchPodKind, ListKind: benchPodKind + "List",
			},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: benchPods.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type:       "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec, "status": status},
				}},
				SelectableFields: []apiextensionsv1.SelectableField{{JSONPath: ".spec.nodeName"}},
			}},
		},
	}
}

// defaultedPod is pod i with the defaults a server gives a pod written
// out (image pull policy, termination message, DNS policy, scheduler,
// service account, the not-ready and unreachable tolerations, service
// links): Kite defaults them itself, the reference server (no admission
// plugins) leaves out the service account and tolerations, so with them
// written out both store the same pod, of the BenchPod's size.
func (o Options) defaultedPod(i int) *v1.Pod {
	pod := o.newPod(i)
	spec := &pod.Spec
	c := &spec.Containers[0]
	c.TerminationMessagePath = v1.TerminationMessagePathDefault
	c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	c.ImagePullPolicy = v1.PullIfNotPresent
	c.Env[1].ValueFrom.FieldRef.APIVersion = "v1"
	spec.DNSPolicy = v1.DNSClusterFirst
	spec.ServiceAccountName, spec.DeprecatedServiceAccount = "default", "default"
	spec.SecurityContext = &v1.PodSecurityContext{}
	spec.SchedulerName = v1.DefaultSchedulerName
	for _, key := range []string{v1.TaintNodeNotReady, v1.TaintNodeUnreachable} {
		spec.Tolerations = append(spec.Tolerations, v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))})
	}
	spec.EnableServiceLinks = new(true)
	return pod
}

// newBenchPod is BenchPod i: the labels and spec of defaultedPod(i) and
// the status a new pod gets.
func (o Options) newBenchPod(i int) (map[string]any, error) {
	pod := o.defaultedPod(i)
	spec := &pod.Spec
	specMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(spec)
	if err != nil {
		return nil, fmt.Errorf("bench pod %d: spec: %w", i, err)
	}
	labels := make(map[string]any, len(pod.Labels))
	for k, v := range pod.Labels {
		labels[k] = v
	}
	return map[string]any{
		"apiVersion": benchPods.GroupVersion().String(),
		"kind":       benchPodKind,
		"metadata":   map[string]any{"name": pod.Name, "namespace": pod.Namespace, "labels": labels},
		"spec":       specMap,
		"status":     map[string]any{"phase": string(v1.PodPending), "qosClass": string(v1.PodQOSBurstable)},
	}, nil
}

// benchPodJSON is BenchPod i as a request body.
func (o Options) benchPodJSON(i int) ([]byte, error) {
	obj, err := o.newBenchPod(i)
	if err != nil {
		return nil, err
	}
	return json.Marshal(obj)
}

// podJSONBody is defaultedPod(i) as a request body.
func (o Options) podJSONBody(i int) ([]byte, error) {
	pod := o.defaultedPod(i)
	pod.APIVersion, pod.Kind = "v1", "Pod"
	return json.Marshal(pod)
}
