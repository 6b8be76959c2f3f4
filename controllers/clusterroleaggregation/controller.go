package clusterroleaggregation

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

// FieldManager is upstream's: the controller applies the rules it owns.
const FieldManager = "clusterrole-aggregation-controller"

// Options configure a Controller.
type Options struct {
	// Client reads and writes ClusterRoles. Required.
	Client kubernetes.Interface
	// Informers shares caches with the other controllers of the process;
	// nil means caches of the controller's own.
	Informers *informer.Factory
}

// Controller aggregates ClusterRoles. Run drives it.
type Controller struct {
	client kubernetes.Interface
	loop   *controller.Loop[string]
	queue  *workqueue.Queue[string]
	roles  *informer.Informer[*rbacv1.ClusterRole]
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("clusterrole-aggregation: Client is required")
	}
	c := &Controller{client: opts.Client, queue: workqueue.New[string](workqueue.Options{})}
	// Any change may change what any aggregated role gathers: queue them
	// all, as upstream (they are few).
	queueAggregated := func(*rbacv1.ClusterRole) {
		for _, r := range c.roles.Store().List() {
			if r.AggregationRule != nil {
				c.queue.Add(r.Name)
			}
		}
	}
	var err error
	c.roles, err = informer.For(opts.Informers, informer.Options[*rbacv1.ClusterRole]{
		Name: "clusterroles", Shape: informer.Shape{Resource: "clusterroles.rbac.authorization.k8s.io"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.RbacV1().ClusterRoles(), nil),
		Handlers: informer.Handlers[*rbacv1.ClusterRole]{
			OnAdd:    queueAggregated,
			OnUpdate: func(_, r *rbacv1.ClusterRole) { queueAggregated(r) },
			OnDelete: queueAggregated,
		},
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[string]{Name: "clusterrole-aggregation", Queue: c.queue, Informers: []controller.Informer{c.roles}, Sync: c.sync}
	return c, nil
}

// Run works until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once the cache is listed and no role is queued or being
// worked on.
func (c *Controller) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

// sync applies one aggregated role's rules when they changed.
func (c *Controller) sync(ctx context.Context, name string) error {
	role, ok := c.roles.Store().Get(name)
	if !ok {
		return nil
	}
	rules, aggregates, err := Aggregate(role, c.roles.Store().List())
	if err != nil || !aggregates || !NeedsUpdate(role, rules) {
		return err
	}
	apply := rbacv1ac.ClusterRole(name)
	for _, r := range rules {
		apply.WithRules(rbacv1ac.PolicyRule().WithVerbs(r.Verbs...).WithAPIGroups(r.APIGroups...).
			WithResources(r.Resources...).WithResourceNames(r.ResourceNames...).WithNonResourceURLs(r.NonResourceURLs...))
	}
	_, err = c.client.RbacV1().ClusterRoles().Apply(ctx, apply, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if apierrors.IsNotFound(err) {
		return nil // deleted meanwhile
	}
	if err != nil {
		return fmt.Errorf("apply the rules of clusterrole %s: %w", name, err)
	}
	return nil
}
