package flowcontrol

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	flowcontrolclient "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/apis/flowcontrol/defaults"
)

// ProducerFieldManager is the field manager of the bootstrap objects'
// writes (upstream's config producer).
const ProducerFieldManager = "api-priority-and-fairness-config-producer-v1"

// DefaultProducerInterval is how often the producer checks the bootstrap
// objects again (upstream's minute).
const DefaultProducerInterval = time.Minute

// autoUpdate is what the apf.kubernetes.io/autoupdate-spec annotation of
// an existing object, and its generation, say (upstream's shouldUpdateSpec):
// the annotation's boolean, or, when it is missing or no boolean, true
// for an object nobody changed since its creation (generation 1).
func autoUpdate(m metav1.Object) bool {
	if v, err := strconv.ParseBool(m.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]); err == nil {
		return v
	}
	return m.GetGeneration() == 1
}

// annotationIs reports whether the annotation holds the boolean want.
func annotationIs(m metav1.Object, want bool) bool {
	v, err := strconv.ParseBool(m.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey])
	return err == nil && v == want
}

func setAnnotation(m metav1.Object, v bool) {
	a := m.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[flowcontrolv1.AutoUpdateAnnotationKey] = strconv.FormatBool(v)
	m.SetAnnotations(a)
}

// ensurePL decides the update of an existing bootstrap priority level
// (nil: none), as upstream's ensurer: a mandatory object always gets the
// bootstrap spec and the annotation "true"; a suggested one gets them
// when autoUpdate says so, and otherwise only the annotation "false". The
// exempt level keeps the shares and lendablePercent an operator set.
func ensurePL(current, boot *flowcontrolv1.PriorityLevelConfiguration, mandatory bool) *flowcontrolv1.PriorityLevelConfiguration {
	auto := mandatory || autoUpdate(current)
	want := boot.DeepCopy()
	defaults.PriorityLevelConfiguration(want)
	if want.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt && current.Spec.Exempt != nil {
		want.Spec.Exempt.NominalConcurrencyShares = current.Spec.Exempt.NominalConcurrencyShares
		want.Spec.Exempt.LendablePercent = current.Spec.Exempt.LendablePercent
	}
	specChanged := auto && !equality.Semantic.DeepEqual(want.Spec, current.Spec)
	if annotationIs(current, auto) && !specChanged {
		return nil
	}
	out := current.DeepCopy()
	setAnnotation(out, auto)
	if specChanged {
		out.Spec = want.Spec
	}
	return out
}

// ensureFS is ensurePL for FlowSchemas.
func ensureFS(current, boot *flowcontrolv1.FlowSchema, mandatory bool) *flowcontrolv1.FlowSchema {
	auto := mandatory || autoUpdate(current)
	want := boot.DeepCopy()
	defaults.FlowSchema(want)
	specChanged := auto && !equality.Semantic.DeepEqual(want.Spec, current.Spec)
	if annotationIs(current, auto) && !specChanged {
		return nil
	}
	out := current.DeepCopy()
	setAnnotation(out, auto)
	if specChanged {
		out.Spec = want.Spec
	}
	return out
}

// unwanted reports an object the producer deletes: one not among the
// bootstrap objects whose annotation is "true" (it was once one of them).
func unwanted(m metav1.Object, bootstrapNames map[string]bool) bool {
	if bootstrapNames[m.GetName()] {
		return false
	}
	v, ok := m.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]
	if !ok {
		return false
	}
	auto, err := strconv.ParseBool(v)
	return err == nil && auto
}

// Producer keeps the mandatory and suggested objects
// (k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap) as kube-apiserver's
// priority-and-fairness-config-producer: missing ones created, existing
// ones updated by the autoupdate-spec rules, former bootstrap objects
// deleted.
type Producer struct {
	Client flowcontrolclient.FlowcontrolV1Interface
	// Interval: 0 means DefaultProducerInterval.
	Interval time.Duration
	// Ensured, when set, is called once, after the first pass that
	// succeeded: upstream's post-start hook returns then, which /readyz
	// waits for (poststarthook/priority-and-fairness-config-producer).
	Ensured func()
}

// Run ensures the objects until ctx ends: every second until a first
// pass succeeds, then every Interval.
func (p *Producer) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	interval := p.Interval
	if interval <= 0 {
		interval = DefaultProducerInterval
	}
	ok := false
	for {
		err := p.Ensure(ctx)
		if err != nil && ctx.Err() == nil {
			logger.Error(err, "Priority and fairness bootstrap configuration, will retry")
		}
		if !ok && err == nil && p.Ensured != nil {
			p.Ensured()
		}
		ok = ok || err == nil
		wait := interval
		if !ok {
			wait = time.Second
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// Ensure makes one pass over the objects.
func (p *Producer) Ensure(ctx context.Context) error {
	plErrs := ensureKind(ctx, clientOf("priority level", p.Client.PriorityLevelConfigurations(),
		func(l *flowcontrolv1.PriorityLevelConfigurationList) []metav1.Object { return itemsOf(l.Items) },
		(*flowcontrolv1.PriorityLevelConfiguration).DeepCopy, ensurePL),
		bootstrap.MandatoryPriorityLevelConfigurations, bootstrap.SuggestedPriorityLevelConfigurations)
	fsErrs := ensureKind(ctx, clientOf("flow schema", p.Client.FlowSchemas(),
		func(l *flowcontrolv1.FlowSchemaList) []metav1.Object { return itemsOf(l.Items) },
		(*flowcontrolv1.FlowSchema).DeepCopy, ensureFS),
		bootstrap.MandatoryFlowSchemas, bootstrap.SuggestedFlowSchemas)
	return errors.Join(append(plErrs, fsErrs...)...)
}

// typedClient is the part of client-go's typed client of one kind the
// producer uses (FlowSchemaInterface, PriorityLevelConfigurationInterface).
type typedClient[T, L any] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// clientOf is the kindClient of a typed client, writing as the producer's
// field manager; deepCopy copies the (shared) bootstrap objects before
// they are sent.
func clientOf[T interface {
	metav1.Object
	comparable
}, L any](kind string, c typedClient[T, L], items func(L) []metav1.Object, deepCopy func(T) T, decide func(current, boot T, mandatory bool) T) kindClient[T] {
	return kindClient[T]{
		kind: kind,
		create: func(ctx context.Context, o T) error {
			_, err := c.Create(ctx, deepCopy(o), metav1.CreateOptions{FieldManager: ProducerFieldManager})
			return err
		},
		update: func(ctx context.Context, o T) error {
			_, err := c.Update(ctx, o, metav1.UpdateOptions{FieldManager: ProducerFieldManager})
			return err
		},
		list: func(ctx context.Context) ([]metav1.Object, error) {
			l, err := c.List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			return items(l), nil
		},
		delete: func(ctx context.Context, name string) error { return c.Delete(ctx, name, metav1.DeleteOptions{}) },
		decide: decide,
	}
}

// itemsOf points at a list's items.
func itemsOf[T any, PT interface {
	*T
	metav1.Object
}](items []T) []metav1.Object {
	out := make([]metav1.Object, len(items))
	for i := range items {
		out[i] = PT(&items[i])
	}
	return out
}

// kindClient is what the producer does with one kind of object.
type kindClient[T interface {
	metav1.Object
	comparable
}] struct {
	kind           string
	create, update func(context.Context, T) error
	list           func(context.Context) ([]metav1.Object, error)
	delete         func(context.Context, string) error
	// decide is ensurePL or ensureFS: the update of an existing object,
	// or the zero T for none.
	decide func(current, boot T, mandatory bool) T
}

// ensureKind creates the missing bootstrap objects of one kind, updates
// the existing ones as decide says, and deletes the unwanted ones. What
// exists is read with one list (as upstream's producer reads its
// informers' caches), not a request per object: a pass that finds
// everything in place, as on every start but the first, is two requests.
func ensureKind[T interface {
	metav1.Object
	comparable
}](ctx context.Context, c kindClient[T], mandatory, suggested []T) []error {
	objs, err := c.list(ctx)
	if err != nil {
		return []error{fmt.Errorf("list %ss: %w", c.kind, err)}
	}
	current := make(map[string]T, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			current[o.GetName()] = t
		}
	}
	var errs []error
	names := map[string]bool{}
	for _, set := range []struct {
		objs      []T
		mandatory bool
	}{{mandatory, true}, {suggested, false}} {
		for _, boot := range set.objs {
			names[boot.GetName()] = true
			var err error
			if cur, ok := current[boot.GetName()]; !ok {
				err = c.create(ctx, boot)
			} else {
				var none T
				if up := c.decide(cur, boot, set.mandatory); up != none {
					err = c.update(ctx, up)
				}
			}
			if err != nil && !apierrors.IsAlreadyExists(err) && !apierrors.IsConflict(err) {
				errs = append(errs, fmt.Errorf("%s %s: %w", c.kind, boot.GetName(), err))
			}
		}
	}
	for _, o := range objs {
		if unwanted(o, names) {
			if err := c.delete(ctx, o.GetName()); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete %s %s: %w", c.kind, o.GetName(), err))
			}
		}
	}
	return errs
}
