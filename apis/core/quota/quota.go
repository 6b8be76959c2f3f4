// Package quota is upstream's quota evaluation as pure functions
// (k8s.io/kubernetes/pkg/quota/v1/evaluator/core and
// k8s.io/apiserver/pkg/quota/v1): what an object uses of a
// ResourceQuota's resources, whether a quota's scopes match it, and the
// resource-list arithmetic. The ResourceQuota admission plugin and the
// resourcequota controller both compute with it, so what admission
// charges is what the controller recounts.
package quota

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/kite-project/kite/apis/core/qos"
)

// Evaluator knows what objects of one group resource use.
type Evaluator struct {
	GroupResource schema.GroupResource
	// resources are the quota resource names it answers for; prefixes
	// and match say which other names it answers for.
	resources []corev1.ResourceName
	match     func(name corev1.ResourceName) bool
	// scope says whether an object is in a quota scope; nil: no scope
	// matches (upstream's MatchesNoScopeFunc).
	scope func(sel corev1.ScopedResourceSelectorRequirement, obj runtime.Object) (bool, error)
	usage func(obj runtime.Object, now time.Time) (corev1.ResourceList, error)
	// constraints says what an object must specify when a quota limits
	// required (pods' requests and limits).
	constraints func(required []corev1.ResourceName, obj runtime.Object) error
	// handles says whether a write changes the usage (nil: creates only).
	handles func(create bool, subresource string, obj, old runtime.Object) bool
}

// ObjectCountName is upstream's count/<resource>[.<group>].
func ObjectCountName(gr schema.GroupResource) corev1.ResourceName {
	return corev1.ResourceName("count/" + gr.String())
}

// legacyObjectCount are upstream's aliases of object counts.
var legacyObjectCount = map[schema.GroupResource]corev1.ResourceName{
	corev1.Resource("configmaps"):             corev1.ResourceConfigMaps,
	corev1.Resource("resourcequotas"):         corev1.ResourceQuotas,
	corev1.Resource("replicationcontrollers"): corev1.ResourceReplicationControllers,
	corev1.Resource("secrets"):                corev1.ResourceSecrets,
}

// Ignored are the resources quota never looks at (upstream's
// DefaultIgnoredResources).
func Ignored(gr schema.GroupResource) bool {
	switch gr {
	case corev1.Resource("bindings"), corev1.Resource("componentstatuses"), corev1.Resource("events"),
		schema.GroupResource{Group: "events.k8s.io", Resource: "events"},
		schema.GroupResource{Group: "authentication.k8s.io", Resource: "tokenreviews"},
		schema.GroupResource{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}:
		return true
	}
	return gr.Group == "authorization.k8s.io" && strings.HasSuffix(gr.Resource, "reviews")
}

// For returns the evaluator of a group resource: pods, services and
// persistentvolumeclaims have their own, every other resource is counted
// (count/<resource>.<group>, and the legacy names of configmaps, secrets,
// replicationcontrollers and resourcequotas).
func For(gr schema.GroupResource) *Evaluator {
	switch gr {
	case corev1.Resource("pods"):
		return podEvaluator()
	case corev1.Resource("services"):
		return serviceEvaluator()
	case corev1.Resource("persistentvolumeclaims"):
		return claimEvaluator()
	}
	names := []corev1.ResourceName{ObjectCountName(gr)}
	if alias, ok := legacyObjectCount[gr]; ok {
		names = append(names, alias)
	}
	return &Evaluator{
		GroupResource: gr,
		resources:     names,
		usage: func(runtime.Object, time.Time) (corev1.ResourceList, error) {
			out := corev1.ResourceList{}
			for _, n := range names {
				out[n] = *resource.NewQuantity(1, resource.DecimalSI)
			}
			return out, nil
		},
	}
}

// Handles says whether a write changes usage: a create; for pods an
// update that changes whether it is terminating and a resize; for
// services and claims every update.
func (e *Evaluator) Handles(create bool, subresource string, obj, old runtime.Object) bool {
	if e.handles == nil {
		return create && subresource == ""
	}
	return e.handles(create, subresource, obj, old)
}

// MatchingResources are the names of input this evaluator answers for.
func (e *Evaluator) MatchingResources(input []corev1.ResourceName) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, n := range input {
		if slices.Contains(e.resources, n) || (e.match != nil && e.match(n)) {
			out = append(out, n)
		}
	}
	return out
}

// Usage is what obj uses, at now (pods past their deletion grace period
// use nothing but their count).
func (e *Evaluator) Usage(obj runtime.Object, now time.Time) (corev1.ResourceList, error) {
	return e.usage(obj, now)
}

// Constraints says what obj must specify for a quota on required.
func (e *Evaluator) Constraints(required []corev1.ResourceName, obj runtime.Object) error {
	if e.constraints == nil {
		return nil
	}
	return e.constraints(required, obj)
}

// MatchesScope says whether obj is in the scope of sel.
func (e *Evaluator) MatchesScope(sel corev1.ScopedResourceSelectorRequirement, obj runtime.Object) (bool, error) {
	if e.scope == nil {
		return false, nil
	}
	return e.scope(sel, obj)
}

// Matches is upstream's generic.Matches: the quota limits at least one
// resource of this evaluator and every scope of it matches obj.
func (e *Evaluator) Matches(q *corev1.ResourceQuota, obj runtime.Object) (bool, error) {
	if len(e.MatchingResources(ResourceNames(q.Status.Hard))) == 0 {
		return false, nil
	}
	for _, sel := range ScopeSelectors(q) {
		ok, err := e.MatchesScope(sel, obj)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// ScopeSelectors are a quota's scopes and scope selector, as
// requirements.
func ScopeSelectors(q *corev1.ResourceQuota) []corev1.ScopedResourceSelectorRequirement {
	var out []corev1.ScopedResourceSelectorRequirement
	for _, s := range q.Spec.Scopes {
		out = append(out, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	if q.Spec.ScopeSelector != nil {
		out = append(out, q.Spec.ScopeSelector.MatchExpressions...)
	}
	return out
}

var (
	one         = *resource.NewQuantity(1, resource.DecimalSI)
	podCount    = ObjectCountName(corev1.Resource("pods"))
	podComputed = []corev1.ResourceName{
		podCount, corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
		corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
		corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
		corev1.ResourcePods,
	}
	// podValidated are the resources a container must specify when a
	// quota limits them.
	podValidated = []corev1.ResourceName{
		corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceRequestsCPU,
		corev1.ResourceRequestsMemory, corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
	}
)

func podEvaluator() *Evaluator {
	return &Evaluator{
		GroupResource: corev1.Resource("pods"),
		resources:     podComputed,
		match: func(n corev1.ResourceName) bool {
			s := string(n)
			if strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) || strings.HasPrefix(s, corev1.ResourceRequestsHugePagesPrefix) {
				return true
			}
			// Extended resources are quota'd as requests.<name>.
			return strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) && !isNativeResource(corev1.ResourceName(strings.TrimPrefix(s, corev1.DefaultResourceRequestsPrefix)))
		},
		scope: podMatchesScope,
		usage: func(obj runtime.Object, now time.Time) (corev1.ResourceList, error) {
			pod, ok := obj.(*corev1.Pod)
			if !ok {
				return nil, fmt.Errorf("expect *v1.Pod, got %T", obj)
			}
			return PodUsage(pod, now), nil
		},
		constraints: podConstraints,
		handles: func(create bool, subresource string, obj, old runtime.Object) bool {
			switch subresource {
			case "":
				if create {
					return true
				}
				pod, ok1 := obj.(*corev1.Pod)
				oldPod, ok2 := old.(*corev1.Pod)
				return ok1 && ok2 && IsTerminating(pod) != IsTerminating(oldPod)
			case "resize":
				return !create
			}
			return false
		},
	}
}

// isNativeResource is upstream's helper.IsNativeResource: no domain, or
// one of kubernetes.io.
func isNativeResource(name corev1.ResourceName) bool {
	s := string(name)
	return !strings.Contains(s, "/") || strings.Contains(s, corev1.ResourceDefaultNamespacePrefix)
}

// PodUsage is upstream's PodUsageFunc: every pod counts; one that is
// neither terminal nor past its deletion grace period also uses its
// requests and limits (with overhead and pod-level resources, as the
// scheduler computes them).
func PodUsage(pod *corev1.Pod, now time.Time) corev1.ResourceList {
	out := corev1.ResourceList{podCount: one}
	if !PodCounts(pod, now) {
		return out
	}
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{UseStatusResources: true})
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{UseStatusResources: true})
	return Add(out, podComputeUsage(requests, limits))
}

// PodCounts is upstream's QuotaV1Pod: whether a pod's compute resources
// are charged.
func PodCounts(pod *corev1.Pod, now time.Time) bool {
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return false
	}
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		grace := time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
		if now.After(pod.DeletionTimestamp.Add(grace)) {
			return false
		}
	}
	return true
}

// podComputeUsage is upstream's podComputeUsageHelper.
func podComputeUsage(requests, limits corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{corev1.ResourcePods: one}
	for _, r := range []struct{ name, req, lim corev1.ResourceName }{
		{corev1.ResourceCPU, corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU},
		{corev1.ResourceMemory, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory},
		{corev1.ResourceEphemeralStorage, corev1.ResourceRequestsEphemeralStorage, corev1.ResourceLimitsEphemeralStorage},
	} {
		if q, ok := requests[r.name]; ok {
			out[r.name] = q
			out[r.req] = q
		}
		if q, ok := limits[r.name]; ok {
			out[r.lim] = q
		}
	}
	for name, q := range requests {
		if strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
			out[name] = q
			out[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+string(name))] = q
		} else if !isNativeResource(name) {
			// Extended resources, as upstream's quota names them.
			out[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+string(name))] = q
		}
	}
	return out
}

// podConstraints is upstream's: when a quota limits cpu or memory
// requests or limits, every container must say them (unless the pod sets
// pod-level resources).
func podConstraints(required []corev1.ResourceName, obj runtime.Object) error {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return fmt.Errorf("expect *v1.Pod, got %T", obj)
	}
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		return nil
	}
	var needed []corev1.ResourceName
	for _, n := range required {
		if slices.Contains(podValidated, n) {
			needed = append(needed, n)
		}
	}
	missing := map[string][]string{}
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range cs {
			has := podComputeUsage(c.Resources.Requests, c.Resources.Limits)
			for _, n := range needed {
				if _, ok := has[n]; !ok && !slices.Contains(missing[string(n)], c.Name) {
					missing[string(n)] = append(missing[string(n)], c.Name)
				}
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var names []string
	for n := range missing {
		names = append(names, n)
	}
	sort.Strings(names)
	msgs := make([]string, 0, len(names))
	for _, n := range names {
		cs := missing[n]
		sort.Strings(cs)
		msgs = append(msgs, fmt.Sprintf("%s for: %s", n, strings.Join(cs, ",")))
	}
	return fmt.Errorf("must specify %s", strings.Join(msgs, "; "))
}

// IsTerminating is upstream's: a pod with activeDeadlineSeconds.
func IsTerminating(pod *corev1.Pod) bool {
	return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
}

// podMatchesScope is upstream's podMatchesScopeFunc.
func podMatchesScope(sel corev1.ScopedResourceSelectorRequirement, obj runtime.Object) (bool, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return false, fmt.Errorf("expect *v1.Pod, got %T", obj)
	}
	switch sel.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return IsTerminating(pod), nil
	case corev1.ResourceQuotaScopeNotTerminating:
		return !IsTerminating(pod), nil
	case corev1.ResourceQuotaScopeBestEffort:
		return qos.GetPodQOS(pod) == corev1.PodQOSBestEffort, nil
	case corev1.ResourceQuotaScopeNotBestEffort:
		return qos.GetPodQOS(pod) != corev1.PodQOSBestEffort, nil
	case corev1.ResourceQuotaScopePriorityClass:
		if sel.Operator == corev1.ScopeSelectorOpExists {
			return pod.Spec.PriorityClassName != "", nil
		}
		s, err := scopeSelector(sel)
		if err != nil {
			return false, err
		}
		var m labels.Set
		if pod.Spec.PriorityClassName != "" {
			m = labels.Set{string(corev1.ResourceQuotaScopePriorityClass): pod.Spec.PriorityClassName}
		}
		return s.Matches(m), nil
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return usesCrossNamespacePodAffinity(pod), nil
	}
	return false, nil
}

// scopeSelector is upstream's ScopedResourceSelectorRequirementsAsSelector.
func scopeSelector(sel corev1.ScopedResourceSelectorRequirement) (labels.Selector, error) {
	var op selection.Operator
	switch sel.Operator {
	case corev1.ScopeSelectorOpIn:
		op = selection.In
	case corev1.ScopeSelectorOpNotIn:
		op = selection.NotIn
	case corev1.ScopeSelectorOpExists:
		op = selection.Exists
	case corev1.ScopeSelectorOpDoesNotExist:
		op = selection.DoesNotExist
	default:
		return nil, fmt.Errorf("%q is not a valid scope selector operator", sel.Operator)
	}
	r, err := labels.NewRequirement(string(sel.ScopeName), op, sel.Values)
	if err != nil {
		return nil, fmt.Errorf("failed to parse and convert selector: %w", err)
	}
	return labels.NewSelector().Add(*r), nil
}

func usesCrossNamespacePodAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	cross := func(t *corev1.PodAffinityTerm) bool { return len(t.Namespaces) != 0 || t.NamespaceSelector != nil }
	var terms []corev1.PodAffinityTerm
	var weighted []corev1.WeightedPodAffinityTerm
	if a.PodAffinity != nil {
		terms = append(terms, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		weighted = append(weighted, a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution...)
	}
	if a.PodAntiAffinity != nil {
		terms = append(terms, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		weighted = append(weighted, a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution...)
	}
	for i := range terms {
		if cross(&terms[i]) {
			return true
		}
	}
	for i := range weighted {
		if cross(&weighted[i].PodAffinityTerm) {
			return true
		}
	}
	return false
}

func serviceEvaluator() *Evaluator {
	return &Evaluator{
		GroupResource: corev1.Resource("services"),
		resources: []corev1.ResourceName{ObjectCountName(corev1.Resource("services")), corev1.ResourceServices,
			corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers},
		handles: func(_ bool, subresource string, _, _ runtime.Object) bool { return subresource == "" },
		usage: func(obj runtime.Object, _ time.Time) (corev1.ResourceList, error) {
			svc, ok := obj.(*corev1.Service)
			if !ok {
				return nil, fmt.Errorf("expect *v1.Service, got %T", obj)
			}
			out := corev1.ResourceList{
				ObjectCountName(corev1.Resource("services")): one,
				corev1.ResourceServices:                      one,
				corev1.ResourceServicesLoadBalancers:         resource.Quantity{Format: resource.DecimalSI},
				corev1.ResourceServicesNodePorts:             resource.Quantity{Format: resource.DecimalSI},
			}
			ports := int64(len(svc.Spec.Ports))
			switch svc.Spec.Type {
			case corev1.ServiceTypeNodePort:
				out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
			case corev1.ServiceTypeLoadBalancer:
				if svc.Spec.AllocateLoadBalancerNodePorts != nil && !*svc.Spec.AllocateLoadBalancerNodePorts {
					ports = 0
					for _, p := range svc.Spec.Ports {
						if p.NodePort != 0 {
							ports++
						}
					}
				}
				out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
				out[corev1.ResourceServicesLoadBalancers] = one
			}
			return out, nil
		},
	}
}

// storageClassSuffix qualifies claim resources by storage class
// (gold.storageclass.storage.k8s.io/requests.storage).
const storageClassSuffix = ".storageclass.storage.k8s.io/"

func claimEvaluator() *Evaluator {
	count := ObjectCountName(corev1.Resource("persistentvolumeclaims"))
	claims := []corev1.ResourceName{corev1.ResourcePersistentVolumeClaims, corev1.ResourceRequestsStorage}
	return &Evaluator{
		GroupResource: corev1.Resource("persistentvolumeclaims"),
		resources:     append([]corev1.ResourceName{count}, claims...),
		match: func(n corev1.ResourceName) bool {
			for _, r := range claims {
				if strings.HasSuffix(string(n), storageClassSuffix+string(r)) {
					return true
				}
			}
			return false
		},
		handles: func(create bool, subresource string, obj, old runtime.Object) bool {
			if subresource == "" {
				return true
			}
			if subresource != "status" || create {
				return false
			}
			pvc, ok1 := obj.(*corev1.PersistentVolumeClaim)
			oldPVC, ok2 := old.(*corev1.PersistentVolumeClaim)
			return ok1 && ok2 && !pvc.Status.AllocatedResources.Storage().Equal(*oldPVC.Status.AllocatedResources.Storage())
		},
		usage: func(obj runtime.Object, _ time.Time) (corev1.ResourceList, error) {
			pvc, ok := obj.(*corev1.PersistentVolumeClaim)
			if !ok {
				return nil, fmt.Errorf("expect *v1.PersistentVolumeClaim, got %T", obj)
			}
			return ClaimUsage(pvc), nil
		},
	}
}

// ClaimUsage is upstream's pvcEvaluator.Usage: the claim, and its storage
// request (the allocated size when larger), rounded up to whole bytes,
// also charged to its storage class.
func ClaimUsage(pvc *corev1.PersistentVolumeClaim) corev1.ResourceList {
	out := corev1.ResourceList{
		corev1.ResourcePersistentVolumeClaims:                      one,
		ObjectCountName(corev1.Resource("persistentvolumeclaims")): one,
	}
	class := ""
	if pvc.Spec.StorageClassName != nil {
		class = *pvc.Spec.StorageClassName
	} else if c, ok := pvc.Annotations[corev1.BetaStorageClassAnnotation]; ok {
		class = c
	}
	if class != "" {
		out[corev1.ResourceName(class+storageClassSuffix+string(corev1.ResourcePersistentVolumeClaims))] = one
	}
	req, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return out
	}
	storage := roundUp(req)
	if alloc, ok := pvc.Status.AllocatedResources[corev1.ResourceStorage]; ok && alloc.Cmp(storage) > 0 {
		storage = roundUp(alloc)
	}
	out[corev1.ResourceRequestsStorage] = storage
	if class != "" {
		out[corev1.ResourceName(class+storageClassSuffix+string(corev1.ResourceRequestsStorage))] = storage
	}
	return out
}

func roundUp(q resource.Quantity) resource.Quantity {
	r := q.DeepCopy()
	r.RoundUp(0)
	return r
}

// Add returns a + b.
func Add(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range a {
		out[k] = v.DeepCopy()
	}
	for k, v := range b {
		if q, ok := out[k]; ok {
			q.Add(v)
			out[k] = q
		} else {
			out[k] = v.DeepCopy()
		}
	}
	return out
}

// SubtractNonNegative returns a - b, no value below zero.
func SubtractNonNegative(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	zero := resource.MustParse("0")
	for k, v := range a {
		q := v.DeepCopy()
		if other, ok := b[k]; ok {
			q.Sub(other)
		}
		if q.Cmp(zero) <= 0 {
			q = zero.DeepCopy()
		}
		out[k] = q
	}
	for k := range b {
		if _, ok := out[k]; !ok {
			out[k] = zero.DeepCopy()
		}
	}
	return out
}

// Mask returns the entries of a named in names.
func Mask(a corev1.ResourceList, names []corev1.ResourceName) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, n := range names {
		if v, ok := a[n]; ok {
			out[n] = v.DeepCopy()
		}
	}
	return out
}

// ResourceNames returns the names of a, sorted.
func ResourceNames(a corev1.ResourceList) []corev1.ResourceName {
	return slices.Sorted(maps.Keys(a))
}

// LessThanOrEqual says whether every value of a is at most b's (names b
// lacks are fine), and the names that are not.
func LessThanOrEqual(a, b corev1.ResourceList) (bool, []corev1.ResourceName) {
	var exceeded []corev1.ResourceName
	for k, v := range a {
		if other, ok := b[k]; ok && v.Cmp(other) > 0 {
			exceeded = append(exceeded, k)
		}
	}
	slices.Sort(exceeded)
	return len(exceeded) == 0, exceeded
}

// Equals says whether a and b hold the same values.
func Equals(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if other, ok := b[k]; !ok || v.Cmp(other) != 0 {
			return false
		}
	}
	return true
}

// RemoveZeros returns a without its zero values.
func RemoveZeros(a corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range a {
		if !v.IsZero() {
			out[k] = v
		}
	}
	return out
}

// Negative returns the names of a's negative values.
func Negative(a corev1.ResourceList) []corev1.ResourceName {
	var out []corev1.ResourceName
	for k, v := range a {
		if v.Sign() == -1 {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// PrettyPrint is upstream's "name=value,..." sorted by name.
func PrettyPrint(a corev1.ResourceList) string {
	parts := make([]string, 0, len(a))
	for _, k := range ResourceNames(a) {
		v := a[k]
		parts = append(parts, string(k)+"="+v.String())
	}
	return strings.Join(parts, ",")
}

// PrettyPrintNames joins names sorted, with commas.
func PrettyPrintNames(names []corev1.ResourceName) string {
	s := make([]string, 0, len(names))
	for _, n := range names {
		s = append(s, string(n))
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

// HasUsageStats says whether the quota's status has a used value for
// every hard resource of interest (upstream refuses, "status unknown",
// until the controller has computed them).
func HasUsageStats(q *corev1.ResourceQuota, interesting []corev1.ResourceName) bool {
	for name := range q.Status.Hard {
		if !slices.Contains(interesting, name) {
			continue
		}
		if _, ok := q.Status.Used[name]; !ok {
			return false
		}
	}
	return true
}

// CountedResource says which group resource an object-count name
// (count/<resource>[.<group>], or a legacy alias such as "secrets")
// counts.
func CountedResource(name corev1.ResourceName) (schema.GroupResource, bool) {
	if s, ok := strings.CutPrefix(string(name), "count/"); ok {
		return schema.ParseGroupResource(s), true
	}
	for gr, alias := range legacyObjectCount {
		if alias == name {
			return gr, true
		}
	}
	return schema.GroupResource{}, false
}
