package builtin

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kite-project/kite/apis/policy/pdb"
	policyvalidation "github.com/kite-project/kite/apis/policy/validation"
	"github.com/kite-project/kite/registry"
)

// PodDisruptionBudgets returns the strategy of policy/v1
// poddisruptionbudgets (upstream's pkg/registry/policy/poddisruptionbudget):
// spec changes move the generation, which the eviction subresource
// compares with status.observedGeneration; status is written by the
// disruption controller and by evictions. Updates must name a
// resourceVersion, as upstream's AllowUnconditionalUpdate is false.
func PodDisruptionBudgets() *registry.Strategy {
	return &registry.Strategy{
		Kind:         policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"),
		Resource:     "poddisruptionbudgets",
		SingularName: "poddisruptionbudget",
		ShortNames:   []string{"pdb"},
		Namespaced:   true,
		New:          func() runtime.Object { return &policyv1.PodDisruptionBudget{} },
		NewList:      func() runtime.Object { return &policyv1.PodDisruptionBudgetList{} },
		PrepareForCreate: func(obj runtime.Object) {
			p := obj.(*policyv1.PodDisruptionBudget)
			p.Status = policyv1.PodDisruptionBudgetStatus{}
			p.Generation = 1
		},
		PrepareForUpdate: func(obj, old runtime.Object) {
			p, o := obj.(*policyv1.PodDisruptionBudget), old.(*policyv1.PodDisruptionBudget)
			p.Status = o.Status
			if !apiequality.Semantic.DeepEqual(p.Spec, o.Spec) {
				p.Generation = o.Generation + 1
			}
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			return policyvalidation.ValidatePodDisruptionBudget(obj.(*policyv1.PodDisruptionBudget), false)
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			allowInvalid := policyvalidation.HasInvalidLabelValueInSelector(old.(*policyv1.PodDisruptionBudget))
			return policyvalidation.ValidatePodDisruptionBudget(obj.(*policyv1.PodDisruptionBudget), allowInvalid)
		},
		Subresources: map[string]*registry.Subresource{
			"status": {
				PrepareForUpdate: func(obj, old runtime.Object) {
					obj.(*policyv1.PodDisruptionBudget).Spec = old.(*policyv1.PodDisruptionBudget).Spec
				},
				ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
					return policyvalidation.ValidatePodDisruptionBudgetStatusUpdate(&obj.(*policyv1.PodDisruptionBudget).Status,
						&old.(*policyv1.PodDisruptionBudget).Status, field.NewPath("status"))
				},
			},
		},
	}
}

// maxDisruptedPodSize is upstream's MaxDisruptedPodSize: evictions the
// disruption controller has not yet confirmed, past which a budget takes
// no more.
const maxDisruptedPodSize = 2000

// evictionAttempts bounds the retries of an eviction whose pod or budget
// keeps changing under it (upstream's EvictionsRetry has 20 steps).
const evictionAttempts = 20

var evictionKind = policyv1.SchemeGroupVersion.WithKind("Eviction")

// evictionSubresource is pods/eviction (POST policy/v1 Eviction).
func evictionSubresource() *registry.Subresource {
	budgets := &budgetLocks{held: map[string]*budgetLock{}}
	return &registry.Subresource{
		Kind:           evictionKind,
		New:            func() runtime.Object { return &policyv1.Eviction{} },
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList { return nil },
		Create: func(ctx context.Context, pods *registry.Store, namespace, name string, body runtime.Object, opts *metav1.CreateOptions) (runtime.Object, error) {
			return evictPod(ctx, budgets, pods, namespace, name, body, opts)
		},
	}
}

// budgetLocks serialises, within this server, the evictions that take a
// disruption from one budget. Every such eviction rewrites the budget's
// status, and only one write per version of it can win: sixteen evictions
// racing on one budget (kubectl drain of a node, a rollout) would each
// retry until it is their turn, up to sixteen writes (and re-reads from
// etcd) per eviction. Taking turns here makes it about one. The write
// stays conditional on the budget as read, so other servers and the
// disruption controller are still judged by optimistic concurrency.
type budgetLocks struct {
	mu   sync.Mutex
	held map[string]*budgetLock
}

// budgetLock is one budget's turn: a token in turn, taken by the eviction
// whose write is in flight. A channel rather than a mutex, so that an
// eviction waiting for its turn gives up when its request ends.
type budgetLock struct {
	turn    chan struct{}
	waiters int // guarded by budgetLocks.mu
}

// lock takes key's turn and returns its release, or ctx's error if the
// request ends first.
func (b *budgetLocks) lock(ctx context.Context, key string) (func(), error) {
	b.mu.Lock()
	l := b.held[key]
	if l == nil {
		l = &budgetLock{turn: make(chan struct{}, 1)}
		b.held[key] = l
	}
	l.waiters++
	b.mu.Unlock()
	leave := func() {
		b.mu.Lock()
		if l.waiters--; l.waiters == 0 {
			delete(b.held, key)
		}
		b.mu.Unlock()
	}
	select {
	case l.turn <- struct{}{}:
		return func() { <-l.turn; leave() }, nil
	case <-ctx.Done():
		leave()
		return nil, fmt.Errorf("waiting for the disruption budget %s: %w", key, ctx.Err())
	}
}

func evictPod(ctx context.Context, budgetLocks *budgetLocks, pods *registry.Store, namespace, name string, body runtime.Object, opts *metav1.CreateOptions) (runtime.Object, error) {
	eviction, ok := body.(*policyv1.Eviction)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a Eviction object: %T", body))
	}
	if eviction.Name != name {
		return nil, apierrors.NewBadRequest("name in URL does not match name in Eviction object")
	}
	if eviction.DeleteOptions != nil && eviction.DeleteOptions.IgnoreStoreReadErrorWithClusterBreakingPotential != nil && *eviction.DeleteOptions.IgnoreStoreReadErrorWithClusterBreakingPotential {
		return nil, apierrors.NewInvalid(evictionKind.GroupKind(), name, field.ErrorList{
			field.Invalid(field.NewPath("deleteOptions").Child("ignoreStoreReadErrorWithClusterBreakingPotential"), true, "can not be set for pod eviction, try after removing the option"),
		})
	}
	deleteOptions, err := propagateDryRun(eviction, opts)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	// With a resourceVersion precondition of the client's, a conflict is
	// the client's to judge: no retry.
	retry := deleteOptions.Preconditions == nil || deleteOptions.Preconditions.ResourceVersion == nil

	var pod *v1.Pod
	for attempt := 1; ; attempt++ {
		obj, err := pods.Get(ctx, namespace, name, &metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		pod = obj.(*v1.Pod)
		if !canIgnorePDB(pod) {
			break
		}
		opts := deleteOptions
		if enforceResourceVersion(pod) && retry {
			opts = withResourceVersion(deleteOptions, pod.ResourceVersion)
		}
		err = markAndDeletePod(ctx, pods, namespace, name, opts)
		if err == nil {
			return evictionSucceeded(), nil
		}
		if !retry || !apierrors.IsConflict(err) || attempt == evictionAttempts {
			return nil, err
		}
	}

	budgets, err := podBudgets(ctx, pods, pod)
	if err != nil {
		return nil, err
	}
	var budgetName string
	guarded := false // the pod's deletion must not race its becoming ready
	switch {
	case len(budgets) > 1:
		return nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 500,
			Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."}}
	case len(budgets) == 1:
		b := budgets[0]
		budgetName = b.Name
		if skip := unhealthyMayGo(pod, b); skip {
			guarded = true
			break
		}
		release, err := budgetLocks.lock(ctx, b.Namespace+"/"+b.Name)
		if err != nil {
			return nil, err
		}
		err = takeDisruption(ctx, pods.Peer(pdbResource), b, pod.Name, isDryRunOpts(deleteOptions.DryRun))
		release()
		if err != nil {
			return nil, err
		}
	}
	opts2 := deleteOptions
	if guarded {
		opts2 = withResourceVersion(deleteOptions, pod.ResourceVersion)
	}
	if err := markAndDeletePod(ctx, pods, namespace, name, opts2); err != nil {
		if apierrors.IsConflict(err) && guarded && retry {
			// The pod changed (became ready, perhaps) since it was
			// judged: the client tries again.
			return nil, tooManyRequests(budgetName)
		}
		return nil, err
	}
	return evictionSucceeded(), nil
}

const pdbResource = "poddisruptionbudgets.policy"

func evictionSucceeded() runtime.Object { return &metav1.Status{Status: metav1.StatusSuccess} }

func isDryRunOpts(dryRun []string) bool { return len(dryRun) > 0 }

// propagateDryRun is upstream's: the request's dryRun goes into the
// eviction's DeleteOptions; both set must agree.
func propagateDryRun(eviction *policyv1.Eviction, opts *metav1.CreateOptions) (*metav1.DeleteOptions, error) {
	if eviction.DeleteOptions == nil {
		return &metav1.DeleteOptions{DryRun: opts.DryRun}, nil
	}
	if len(eviction.DeleteOptions.DryRun) == 0 {
		eviction.DeleteOptions.DryRun = opts.DryRun
		return eviction.DeleteOptions, nil
	}
	if len(opts.DryRun) == 0 {
		return eviction.DeleteOptions, nil
	}
	if !reflect.DeepEqual(opts.DryRun, eviction.DeleteOptions.DryRun) {
		return nil, fmt.Errorf("Non-matching dry-run options in request and content: %v and %v", opts.DryRun, eviction.DeleteOptions.DryRun)
	}
	return eviction.DeleteOptions, nil
}

// canIgnorePDB is upstream's: a terminal or pending pod, or one being
// deleted, has disrupted already (or never served).
func canIgnorePDB(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed ||
		pod.Status.Phase == v1.PodPending || pod.DeletionTimestamp != nil
}

// enforceResourceVersion is upstream's shouldEnforceResourceVersion: a
// pending pod is deleted only as it was judged, so that it does not
// become ready (and count) in between.
func enforceResourceVersion(pod *v1.Pod) bool {
	return pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed && pod.DeletionTimestamp == nil
}

func withResourceVersion(opts *metav1.DeleteOptions, rv string) *metav1.DeleteOptions {
	opts = opts.DeepCopy()
	if opts.Preconditions == nil {
		opts.Preconditions = &metav1.Preconditions{}
	}
	opts.Preconditions.ResourceVersion = &rv
	return opts
}

// unhealthyMayGo is upstream's check of an unready pod: with
// AlwaysAllow it goes without taking a disruption; with IfHealthyBudget
// (the default) it goes so when the budget is met without it.
func unhealthyMayGo(pod *v1.Pod, b *policyv1.PodDisruptionBudget) bool {
	if podReady(pod) {
		return false
	}
	if p := b.Spec.UnhealthyPodEvictionPolicy; p != nil && *p == policyv1.AlwaysAllow {
		return true
	}
	return b.Status.CurrentHealthy >= b.Status.DesiredHealthy && b.Status.DesiredHealthy > 0
}

func podReady(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// podBudgets returns the budgets of the pod's namespace whose selector
// matches it (an invalid selector matches nothing).
func podBudgets(ctx context.Context, pods *registry.Store, pod *v1.Pod) ([]*policyv1.PodDisruptionBudget, error) {
	store := pods.Peer(pdbResource)
	if store == nil {
		return nil, nil // budgets are not served: none applies
	}
	obj, err := store.List(ctx, pod.Namespace, &metainternalversion.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list the disruption budgets of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	var out []*policyv1.PodDisruptionBudget
	for i := range obj.(*policyv1.PodDisruptionBudgetList).Items {
		b := &obj.(*policyv1.PodDisruptionBudgetList).Items[i]
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, b)
	}
	return out, nil
}

// takeDisruption checks that the budget allows one more disruption and
// takes it, in one write conditional on the budget as read: a budget
// changed meanwhile is read and judged again.
func takeDisruption(ctx context.Context, store *registry.Store, b *policyv1.PodDisruptionBudget, podName string, dryRun bool) error {
	if dryRun {
		_, err := CheckAndDecrement(b, podName, time.Now())
		return err
	}
	_, _, err := store.Update(ctx, &registry.UpdateRequest{
		Namespace: b.Namespace, Name: b.Name, Subresource: "status",
		Options: metav1.UpdateOptions{FieldManager: "kube-apiserver"},
		Object: func(_ context.Context, existing runtime.Object) (runtime.Object, error) {
			cur := existing.(*policyv1.PodDisruptionBudget)
			return CheckAndDecrement(cur, podName, time.Now())
		},
	})
	return err
}

// CheckAndDecrement is upstream's checkAndDecrement: whether the budget
// b allows evicting podName now, and if so b as the eviction leaves it
// (a copy: one disruption fewer allowed, the pod in disruptedPods). The
// error is upstream's: 429 while the budget is not yet processed or
// allows no disruption, 403 when its status is broken.
func CheckAndDecrement(b *policyv1.PodDisruptionBudget, podName string, now time.Time) (*policyv1.PodDisruptionBudget, error) {
	if b.Status.ObservedGeneration < b.Generation {
		return nil, tooManyRequests(b.Name)
	}
	if b.Status.DisruptionsAllowed < 0 {
		return nil, budgetForbidden(b.Name, "pdb disruptions allowed is negative",
			fmt.Sprintf("The disruption budget %s does not allow evicting pods currently: pdb disruptions allowed is negative", b.Name))
	}
	if len(b.Status.DisruptedPods) > maxDisruptedPodSize {
		return nil, budgetForbidden(b.Name, "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
			fmt.Sprintf("The disruption budget %s does not allow evicting pods currently: too many pending evictions not confirmed by PDB controller", b.Name))
	}
	if b.Status.DisruptionsAllowed == 0 {
		err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: noDisruptionMessage(b)})
		return nil, err
	}
	b = b.DeepCopy()
	b.Status.DisruptionsAllowed--
	if b.Status.DisruptionsAllowed == 0 {
		pdb.UpdateDisruptionAllowedCondition(b)
	}
	if b.Status.DisruptedPods == nil {
		b.Status.DisruptedPods = map[string]metav1.Time{}
	}
	// The disruption controller counts the pod as gone until it sees it
	// deleted, or for two minutes.
	b.Status.DisruptedPods[podName] = metav1.NewTime(now)
	return b, nil
}

// noDisruptionMessage is the DisruptionBudget cause of a budget at zero,
// as upstream words it by what its status says.
func noDisruptionMessage(b *policyv1.PodDisruptionBudget) string {
	c := apimeta.FindStatusCondition(b.Status.Conditions, policyv1.DisruptionAllowedCondition)
	switch {
	case c != nil && c.Status == metav1.ConditionFalse && c.Message != "" && c.Reason == policyv1.SyncFailedReason:
		return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently because it failed sync: %s", b.Name, c.Message)
	case b.Status.CurrentHealthy <= b.Status.DesiredHealthy:
		return fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", b.Name, b.Status.DesiredHealthy, b.Status.CurrentHealthy)
	case c != nil && c.Status == metav1.ConditionFalse && c.Message != "":
		return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently (%s): %s", b.Name, c.Reason, c.Message)
	}
	return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently", b.Name)
}

// tooManyRequests is upstream's createTooManyRequestsError: the budget
// has not caught up yet, try again in 10 s.
func tooManyRequests(budget string) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause,
		Message: fmt.Sprintf("The disruption budget %s is still being processed by the server.", budget)})
	return err
}

func budgetForbidden(budget, reason, cause string) error {
	err := apierrors.NewForbidden(policyv1.Resource("poddisruptionbudget"), budget, errors.New(reason))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: cause})
	return err
}

// markAndDeletePod is upstream's addConditionAndDeletePod: the pod gets
// the DisruptionTarget condition (EvictionByEvictionAPI), written under
// the delete's preconditions, then is deleted with the eviction's
// options (the precondition moved to the version the condition made).
func markAndDeletePod(ctx context.Context, pods *registry.Store, namespace, name string, opts *metav1.DeleteOptions) error {
	if !isDryRunOpts(opts.DryRun) {
		gr := pods.Strategy().GroupResource()
		out, _, err := pods.Update(ctx, &registry.UpdateRequest{
			Namespace: namespace, Name: name, Subresource: "status",
			Options: metav1.UpdateOptions{FieldManager: "kube-apiserver"},
			Object: func(_ context.Context, existing runtime.Object) (runtime.Object, error) {
				pod := existing.(*v1.Pod)
				if p := opts.Preconditions; p != nil {
					if p.UID != nil && *p.UID != "" && *p.UID != pod.UID {
						return nil, apierrors.NewConflict(gr, name, fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, pod.UID))
					}
					if p.ResourceVersion != nil && *p.ResourceVersion != "" && *p.ResourceVersion != pod.ResourceVersion {
						return nil, apierrors.NewConflict(gr, name, fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *p.ResourceVersion, pod.ResourceVersion))
					}
				}
				setPodCondition(pod, v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
					Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting", LastTransitionTime: metav1.Now()})
				return pod, nil
			},
		})
		if err != nil {
			return err
		}
		if opts.Preconditions != nil && opts.Preconditions.ResourceVersion != nil {
			m, err := apimeta.Accessor(out)
			if err != nil {
				return apierrors.NewInternalError(err)
			}
			opts = withResourceVersion(opts, m.GetResourceVersion())
		}
	}
	_, _, err := pods.Delete(ctx, namespace, name, opts)
	return err
}
