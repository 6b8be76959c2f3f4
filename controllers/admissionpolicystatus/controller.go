// Package admissionpolicystatus is upstream's
// validatingadmissionpolicy-status controller (kube-controller-manager):
// it type-checks each ValidatingAdmissionPolicy's expressions against the
// schemas of the kinds it matches and writes the warnings to
// status.typeChecking, with status.observedGeneration.
//
// The type checking itself is upstream's TypeChecker, fed with the
// served OpenAPI v3 schemas (read through discovery, as upstream reads
// custom resources' schemas) and a discovery REST mapper.
package admissionpolicystatus

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	admissionregistrationv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

// Name is upstream's controller name, also the field manager of the
// status it applies.
const Name = "validatingadmissionpolicy-status-controller"

// Options configure a Controller.
type Options struct {
	// Client reads policies, discovery and schemas and writes status.
	// Required.
	Client kubernetes.Interface
	// Informers shares caches with the other controllers of the
	// process; nil means caches of the controller's own.
	Informers *informer.Factory
}

// Controller writes ValidatingAdmissionPolicies' type-checking status.
type Controller struct {
	client   kubernetes.Interface
	loop     *controller.Loop[string]
	queue    *workqueue.Queue[string]
	policies *informer.Informer[*admissionregistrationv1.ValidatingAdmissionPolicy]
	checker  *validating.TypeChecker
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("%s: Client is required", Name)
	}
	disc := memory.NewMemCacheClient(opts.Client.Discovery())
	c := &Controller{
		client: opts.Client,
		queue:  workqueue.New[string](workqueue.Options{}),
		checker: &validating.TypeChecker{
			SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: opts.Client.Discovery()},
			// Reset when a kind is not found (upstream's
			// tryRefreshRESTMapper), so new CRDs are found.
			RestMapper: restmapper.NewDeferredDiscoveryRESTMapper(disc),
		},
	}
	queue := func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { c.queue.Add(p.Name) }
	var err error
	c.policies, err = informer.For(opts.Informers, informer.Options[*admissionregistrationv1.ValidatingAdmissionPolicy]{
		Name: "validatingadmissionpolicies", Shape: informer.Shape{Resource: "validatingadmissionpolicies.admissionregistration.k8s.io"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies(), nil),
		Handlers: informer.Handlers[*admissionregistrationv1.ValidatingAdmissionPolicy]{
			OnAdd:    queue,
			OnUpdate: func(_, p *admissionregistrationv1.ValidatingAdmissionPolicy) { queue(p) },
		},
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[string]{Name: Name, Queue: c.queue, Informers: []controller.Informer{c.policies}, Sync: c.sync}
	return c, nil
}

// Run works until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once the cache is listed and no policy is queued or
// being checked.
func (c *Controller) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

// NeedsCheck says whether a policy's status is behind its spec: upstream
// checks each generation once.
func NeedsCheck(p *admissionregistrationv1.ValidatingAdmissionPolicy) bool {
	return p.Generation > p.Status.ObservedGeneration
}

// sync type-checks one policy and applies its status.
func (c *Controller) sync(ctx context.Context, name string) error {
	p, ok := c.policies.Store().Get(name)
	if !ok || !NeedsCheck(p) {
		return nil
	}
	warnings := c.checker.Check(p)
	tc := admissionregistrationv1ac.TypeChecking()
	// An empty list, not none: a non-nil typeChecking says the check is done.
	tc.ExpressionWarnings = []admissionregistrationv1ac.ExpressionWarningApplyConfiguration{}
	for _, w := range warnings {
		tc.WithExpressionWarnings(admissionregistrationv1ac.ExpressionWarning().WithFieldRef(w.FieldRef).WithWarning(w.Warning))
	}
	apply := admissionregistrationv1ac.ValidatingAdmissionPolicy(name).WithStatus(
		admissionregistrationv1ac.ValidatingAdmissionPolicyStatus().WithObservedGeneration(p.Generation).WithTypeChecking(tc))
	_, err := c.client.AdmissionregistrationV1().ValidatingAdmissionPolicies().ApplyStatus(ctx, apply, metav1.ApplyOptions{FieldManager: Name, Force: true})
	if apierrors.IsNotFound(err) {
		return nil // deleted meanwhile
	}
	if err != nil {
		return fmt.Errorf("apply the status of validatingadmissionpolicy %s: %w", name, err)
	}
	return nil
}
