package apiserver_test

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// fuzzNamespace holds the namespaced objects the request targets create.
const fuzzNamespace = "fuzz"

// sample returns a valid object of kind named name, in fuzzNamespace when
// the kind is namespaced: a seed for the body targets and the fixture they
// update. Every kind Kite serves has one (TestEveryServedKindHasASample).
func sample(kind schema.GroupVersionKind, name string) runtime.Object {
	meta := metav1.ObjectMeta{Name: name, Namespace: fuzzNamespace, Labels: map[string]string{"app": "web", "example.com/tier": "front"}, Annotations: map[string]string{"note": "a: b, c"}}
	// The workloads' selector, and the pod template it matches.
	replicas := int32(2)
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	template := v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "web", Image: "nginx:1.27", Command: []string{"nginx"}}}}}
	now := metav1.NewMicroTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	var obj runtime.Object
	switch kind.GroupKind() {
	case schema.GroupKind{Kind: "Pod"}:
		obj = &v1.Pod{ObjectMeta: meta, Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "web", Image: "nginx:1.27", Ports: []v1.ContainerPort{{ContainerPort: 80}},
			Env: []v1.EnvVar{{Name: "A", Value: "1"}}, Command: []string{"nginx", "-g", "daemon off;"},
		}}}}
	case schema.GroupKind{Kind: "Node"}:
		meta.Namespace = ""
		obj = &v1.Node{ObjectMeta: meta, Spec: v1.NodeSpec{PodCIDR: "10.244.1.0/24", Taints: []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoSchedule}}}}
	case schema.GroupKind{Kind: "Namespace"}:
		meta.Namespace = ""
		obj = &v1.Namespace{ObjectMeta: meta}
	case schema.GroupKind{Kind: "ConfigMap"}:
		obj = &v1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"config.yaml": "a: 1\n", "empty": ""}, BinaryData: map[string][]byte{"bin": {0, 1, 2}}}
	case schema.GroupKind{Kind: "Secret"}:
		obj = &v1.Secret{ObjectMeta: meta, Type: v1.SecretTypeOpaque, Data: map[string][]byte{"password": []byte("s3cr3t")}, StringData: map[string]string{"user": "admin"}}
	case schema.GroupKind{Kind: "Service"}:
		obj = &v1.Service{ObjectMeta: meta, Spec: v1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []v1.ServicePort{{Name: "http", Port: 80}}}}
	case schema.GroupKind{Kind: "ServiceAccount"}:
		obj = &v1.ServiceAccount{ObjectMeta: meta, Secrets: []v1.ObjectReference{{Name: "token"}}}
	case schema.GroupKind{Kind: "Event"}:
		obj = &v1.Event{ObjectMeta: meta, InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: fuzzNamespace, Name: "web", APIVersion: "v1"},
			Reason: "Started", Message: "Started container web", Type: v1.EventTypeNormal, Source: v1.EventSource{Component: "kubelet", Host: "node1"},
			FirstTimestamp: metav1.NewTime(now.Time), LastTimestamp: metav1.NewTime(now.Time), Count: 1}
	case schema.GroupKind{Group: "events.k8s.io", Kind: "Event"}:
		obj = &eventsv1.Event{ObjectMeta: meta, EventTime: now, ReportingController: "example.com/controller", ReportingInstance: "controller-1",
			Action: "Scheduling", Reason: "Scheduled", Type: v1.EventTypeNormal, Note: "assigned",
			Regarding: v1.ObjectReference{Kind: "Pod", Namespace: fuzzNamespace, Name: "web", APIVersion: "v1"}}
	case schema.GroupKind{Group: "coordination.k8s.io", Kind: "Lease"}:
		holder, seconds := "node1", int32(40)
		obj = &coordinationv1.Lease{ObjectMeta: meta, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds, RenewTime: &now}}
	case schema.GroupKind{Group: "authorization.k8s.io", Kind: "SelfSubjectAccessReview"}:
		obj = &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: fuzzNamespace, Verb: "list", Resource: "pods"}}}
	case schema.GroupKind{Group: "authorization.k8s.io", Kind: "SelfSubjectRulesReview"}:
		obj = &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: fuzzNamespace}}
	case schema.GroupKind{Group: "authentication.k8s.io", Kind: "SelfSubjectReview"}:
		obj = &authenticationv1.SelfSubjectReview{}
	case schema.GroupKind{Group: "authorization.k8s.io", Kind: "SubjectAccessReview"}:
		obj = &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", Groups: []string{"devs"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: fuzzNamespace, Verb: "list", Resource: "pods"}}}
	case schema.GroupKind{Group: "authorization.k8s.io", Kind: "LocalSubjectAccessReview"}:
		obj = &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: fuzzNamespace}, Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice",
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: fuzzNamespace, Verb: "get", Resource: "pods", Name: "web"}}}
	case schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "Role"}:
		obj = &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}
	case schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:
		meta.Namespace = ""
		obj = &rbacv1.ClusterRole{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"example.com/aggregate": "true"}}}}}
	case schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}:
		obj = &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}, {Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: fuzzNamespace}}}
	case schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:
		meta.Namespace = ""
		obj = &rbacv1.ClusterRoleBinding{ObjectMeta: meta, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "devs"}}}
	case schema.GroupKind{Group: "authentication.k8s.io", Kind: "TokenReview"}:
		obj = &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "a-token"}}
	case schema.GroupKind{Group: "apps", Kind: "Deployment"}:
		obj = &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: selector, Template: template}}
	case schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}:
		obj = &appsv1.ReplicaSet{ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: selector, Template: template}}
	case schema.GroupKind{Group: "apps", Kind: "ControllerRevision"}:
		obj = &appsv1.ControllerRevision{ObjectMeta: meta, Revision: 1, Data: runtime.RawExtension{Raw: []byte(`{"spec":{"template":{}}}`)}}
	case schema.GroupKind{Group: "batch", Kind: "Job"}:
		jobTemplate := *template.DeepCopy()
		jobTemplate.Spec.RestartPolicy = v1.RestartPolicyNever
		obj = &batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{Template: jobTemplate}}
	case schema.GroupKind{Group: "batch", Kind: "CronJob"}:
		jobTemplate := *template.DeepCopy()
		jobTemplate.Spec.RestartPolicy = v1.RestartPolicyOnFailure
		obj = &batchv1.CronJob{ObjectMeta: meta, Spec: batchv1.CronJobSpec{Schedule: "*/5 * * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: jobTemplate}}}}
	case schema.GroupKind{Kind: "ReplicationController"}:
		obj = &v1.ReplicationController{ObjectMeta: meta, Spec: v1.ReplicationControllerSpec{Replicas: &replicas, Selector: map[string]string{"app": "web"}, Template: &template}}
	case schema.GroupKind{Kind: "PodTemplate"}:
		obj = &v1.PodTemplate{ObjectMeta: meta, Template: template}
	case schema.GroupKind{Group: "policy", Kind: "PodDisruptionBudget"}:
		minAvailable := intstr.FromString("50%")
		obj = &policyv1.PodDisruptionBudget{ObjectMeta: meta, Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: selector}}
	default:
		if obj = admissionRegistrationSample(kind, meta); obj == nil {
			obj = workloadStorageSample(kind.GroupKind(), meta, selector, template)
		}
		if obj == nil {
			obj = coverageSample(kind, meta)
		}
		if obj == nil {
			obj = serviceNetSample(kind.GroupKind(), meta)
		}
		if obj == nil {
			obj = autoscalingSample(kind, meta)
		}
		if obj == nil {
			return nil
		}
	}
	obj.GetObjectKind().SetGroupVersionKind(kind)
	return obj
}
