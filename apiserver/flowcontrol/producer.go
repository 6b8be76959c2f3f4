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
	var errs []error
	pls, fss := p.Client.PriorityLevelConfigurations(), p.Client.FlowSchemas()
	create := metav1.CreateOptions{FieldManager: ProducerFieldManager}
	update := metav1.UpdateOptions{FieldManager: ProducerFieldManager}
	plNames, fsNames := map[string]bool{}, map[string]bool{}
	for _, set := range []struct {
		objs      []*flowcontrolv1.PriorityLevelConfiguration
		mandatory bool
	}{{bootstrap.MandatoryPriorityLevelConfigurations, true}, {bootstrap.SuggestedPriorityLevelConfigurations, false}} {
		for _, boot := range set.objs {
			plNames[boot.Name] = true
			cur, err := pls.Get(ctx, boot.Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				_, err = pls.Create(ctx, boot.DeepCopy(), create)
			case err == nil:
				if up := ensurePL(cur, boot, set.mandatory); up != nil {
					_, err = pls.Update(ctx, up, update)
				}
			}
			if err != nil && !apierrors.IsAlreadyExists(err) && !apierrors.IsConflict(err) {
				errs = append(errs, fmt.Errorf("priority level %s: %w", boot.Name, err))
			}
		}
	}
	for _, set := range []struct {
		objs      []*flowcontrolv1.FlowSchema
		mandatory bool
	}{{bootstrap.MandatoryFlowSchemas, true}, {bootstrap.SuggestedFlowSchemas, false}} {
		for _, boot := range set.objs {
			fsNames[boot.Name] = true
			cur, err := fss.Get(ctx, boot.Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				_, err = fss.Create(ctx, boot.DeepCopy(), create)
			case err == nil:
				if up := ensureFS(cur, boot, set.mandatory); up != nil {
					_, err = fss.Update(ctx, up, update)
				}
			}
			if err != nil && !apierrors.IsAlreadyExists(err) && !apierrors.IsConflict(err) {
				errs = append(errs, fmt.Errorf("flow schema %s: %w", boot.Name, err))
			}
		}
	}
	if list, err := pls.List(ctx, metav1.ListOptions{}); err != nil {
		errs = append(errs, fmt.Errorf("list priority levels: %w", err))
	} else {
		for i := range list.Items {
			if pl := &list.Items[i]; unwanted(pl, plNames) {
				if err := pls.Delete(ctx, pl.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					errs = append(errs, fmt.Errorf("delete priority level %s: %w", pl.Name, err))
				}
			}
		}
	}
	if list, err := fss.List(ctx, metav1.ListOptions{}); err != nil {
		errs = append(errs, fmt.Errorf("list flow schemas: %w", err))
	} else {
		for i := range list.Items {
			if fs := &list.Items[i]; unwanted(fs, fsNames) {
				if err := fss.Delete(ctx, fs.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					errs = append(errs, fmt.Errorf("delete flow schema %s: %w", fs.Name, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}
