package builtin

import (
	"context"
	"errors"
	"fmt"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/warning"
	podsecurityadmission "k8s.io/pod-security-admission/admission"
	podsecurityconfig "k8s.io/pod-security-admission/admission/api/load"
	podsecurityapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/metrics"
	"k8s.io/pod-security-admission/policy"

	"github.com/kite-project/kite/registry"
)

// PluginPodSecurity is upstream's name (plugin/pkg/admission/security/podsecurity).
const PluginPodSecurity = "PodSecurity"

// PodSecurityPlugin is upstream's PodSecurity admission over upstream's
// own library (k8s.io/pod-security-admission), with its default
// configuration: privileged at latest unless the namespace's
// pod-security.kubernetes.io/enforce|audit|warn labels (and their
// -version labels) say otherwise, and no exemptions. Pods are enforced
// (403 with the library's message), warned about (Warning headers) and
// audited; workload resources with pod templates are warned about and
// audited; a namespace whose enforce label changes gets the library's
// warnings for its existing pods that the new level would refuse. The
// namespace and its pods are read from the served Stores (upstream reads
// informers, then the namespace live).
func PodSecurityPlugin(stores func(groupResource string) *registry.Store) registry.AdmissionPlugin {
	p := &podSecurity{}
	// Built at the first request: the library's checks are made once, and
	// not at all by a server that admits no pod.
	p.delegate = sync.OnceValues(func() (*podsecurityadmission.Admission, error) {
		return newPodSecurityAdmission(storeNamespaceGetter{stores}, storePodLister{stores})
	})
	return registry.AdmissionPlugin{
		Name:     PluginPodSecurity,
		Handles:  func(op admission.Operation) bool { return op == admission.Create || op == admission.Update },
		Validate: p.validate,
	}
}

type podSecurity struct {
	delegate func() (*podsecurityadmission.Admission, error)
}

// newPodSecurityAdmission builds the library's admission with its
// default configuration and checks, reading through getter and lister.
func newPodSecurityAdmission(getter podsecurityadmission.NamespaceGetter, lister podsecurityadmission.PodLister) (*podsecurityadmission.Admission, error) {
	cfg, err := podsecurityconfig.LoadFromData(nil)
	if err != nil {
		return nil, fmt.Errorf("pod security default configuration: %w", err)
	}
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return nil, fmt.Errorf("pod security checks: %w", err)
	}
	a := &podsecurityadmission.Admission{
		Configuration:    cfg,
		Evaluator:        evaluator,
		Metrics:          noPodSecurityMetrics{},
		PodSpecExtractor: podsecurityadmission.DefaultPodSpecExtractor{},
		NamespaceGetter:  getter,
		PodLister:        lister,
	}
	if err := a.CompleteConfiguration(); err != nil {
		return nil, err
	}
	if err := a.ValidateConfiguration(); err != nil {
		return nil, err
	}
	return a, nil
}

func (p *podSecurity) validate(ctx context.Context, a admission.Attributes) error {
	gr := a.GetResource().GroupResource()
	if gr != v1.Resource("pods") && gr != v1.Resource("namespaces") && !(podsecurityadmission.DefaultPodSpecExtractor{}).HasPodSpec(gr) {
		return nil
	}
	delegate, err := p.delegate()
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	result := delegate.Validate(ctx, podSecurityAttributes{a})
	for _, w := range result.Warnings {
		warning.AddWarning(ctx, "", w)
	}
	return PodSecurityError(a, result)
}

// PodSecurityError is upstream's plugin's answer for the library's
// response: nil when allowed, else a 403 with the response's message,
// reason, details and code.
func PodSecurityError(a admission.Attributes, result *admissionv1.AdmissionResponse) error {
	if result.Allowed {
		return nil
	}
	var status *apierrors.StatusError
	if !errors.As(admission.NewForbidden(a, errors.New("Not allowed by PodSecurity")), &status) {
		return fmt.Errorf("not allowed by PodSecurity")
	}
	if r := result.Result; r != nil {
		if r.Message != "" {
			status.ErrStatus.Message = r.Message
		}
		if r.Reason != "" {
			status.ErrStatus.Reason = r.Reason
		}
		if r.Details != nil {
			status.ErrStatus.Details = r.Details
		}
		if r.Code != 0 {
			status.ErrStatus.Code = r.Code
		}
	}
	return status
}

// podSecurityAttributes are a request's attributes as the library reads
// them: Kite's objects are already the v1 ones it wants.
type podSecurityAttributes struct{ a admission.Attributes }

func (p podSecurityAttributes) GetName() string                          { return p.a.GetName() }
func (p podSecurityAttributes) GetNamespace() string                     { return p.a.GetNamespace() }
func (p podSecurityAttributes) GetResource() schema.GroupVersionResource { return p.a.GetResource() }
func (p podSecurityAttributes) GetKind() schema.GroupVersionKind         { return p.a.GetKind() }
func (p podSecurityAttributes) GetSubresource() string                   { return p.a.GetSubresource() }
func (p podSecurityAttributes) GetOperation() admissionv1.Operation {
	return admissionv1.Operation(p.a.GetOperation())
}
func (p podSecurityAttributes) GetObject() (runtime.Object, error)    { return p.a.GetObject(), nil }
func (p podSecurityAttributes) GetOldObject() (runtime.Object, error) { return p.a.GetOldObject(), nil }
func (p podSecurityAttributes) GetUserName() string {
	if u := p.a.GetUserInfo(); u != nil {
		return u.GetName()
	}
	return ""
}

// storeNamespaceGetter reads namespaces from their Store.
type storeNamespaceGetter struct {
	stores func(groupResource string) *registry.Store
}

func (g storeNamespaceGetter) GetNamespace(ctx context.Context, name string) (*v1.Namespace, error) {
	store := g.stores("namespaces")
	if store == nil {
		return nil, fmt.Errorf("namespaces are not served yet")
	}
	obj, err := cachedGet(ctx, store, "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*v1.Namespace), nil
}

// storePodLister lists a namespace's pods from the watch cache, as
// upstream lists its informer's.
type storePodLister struct {
	stores func(groupResource string) *registry.Store
}

func (l storePodLister) ListPods(ctx context.Context, namespace string) ([]*v1.Pod, error) {
	store := l.stores("pods")
	if store == nil {
		return nil, fmt.Errorf("pods are not served yet")
	}
	obj, err := cachedList(ctx, store, namespace)
	if err != nil {
		return nil, err
	}
	items := obj.(*v1.PodList).Items
	out := make([]*v1.Pod, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out, nil
}

// noPodSecurityMetrics records nothing: Kite's metrics do not carry the
// library's counters (yet).
type noPodSecurityMetrics struct{}

func (noPodSecurityMetrics) RecordEvaluation(metrics.Decision, podsecurityapi.LevelVersion, metrics.Mode, podsecurityapi.Attributes) {
}
func (noPodSecurityMetrics) RecordExemption(podsecurityapi.Attributes)   {}
func (noPodSecurityMetrics) RecordError(bool, podsecurityapi.Attributes) {}
