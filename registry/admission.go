package registry

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// Admission is the admission chain a Store runs every write through, in
// kube-apiserver's order (docs/admission.md):
//
//	create, update: Default → Admit → Default again → PrepareFor* and
//	    validation → Validate → storage (or, under dry-run, nothing)
//	delete: Admit (no objects) → the deletion's checks → Validate (the
//	    old object) → storage
//
// Attributes are upstream's (k8s.io/apiserver/pkg/admission), carrying the
// versioned objects Kite works with. Admit may change the object of its
// attributes in place; Validate must not change anything. An error stops
// the request and goes to the client as it is when it is an API status
// error (a plugin's 403 or 404), else as upstream's 403 for admission.
type Admission interface {
	Admit(ctx context.Context, a admission.Attributes) error
	Validate(ctx context.Context, a admission.Attributes) error
}

// AdmissionPlugin is one named step of a Chain: a mutating step (Admit),
// a validating one (Validate), or both. Handles, when set, says which
// operations it looks at; nil means all.
type AdmissionPlugin struct {
	Name     string
	Handles  func(op admission.Operation) bool
	Admit    func(ctx context.Context, a admission.Attributes) error
	Validate func(ctx context.Context, a admission.Attributes) error
}

// Chain runs its plugins in order: every Admit in Admit, every Validate
// in Validate, stopping at the first error, as upstream's chainAdmissionHandler.
type Chain []AdmissionPlugin

// Admit runs the mutating plugins, and all of them once more when one
// asked for it through the attributes' reinvocation context, as
// upstream's reinvoker: a mutating webhook or policy that changed the
// object after an earlier one with reinvocationPolicy IfNeeded ran asks
// for the second pass. In it the built-in plugins run again (they are
// idempotent) and the webhooks and policies run only those their
// plugin marked for reinvocation; there is no third pass.
func (c Chain) Admit(ctx context.Context, a admission.Attributes) error {
	if err := c.admitOnce(ctx, a); err != nil {
		return err
	}
	if rc := a.GetReinvocationContext(); rc != nil && rc.ShouldReinvoke() {
		rc.SetIsReinvoke()
		return c.admitOnce(ctx, a)
	}
	return nil
}

func (c Chain) admitOnce(ctx context.Context, a admission.Attributes) error {
	for _, p := range c {
		if p.Admit == nil || (p.Handles != nil && !p.Handles(a.GetOperation())) {
			continue
		}
		if err := p.Admit(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// Validate runs the validating plugins.
func (c Chain) Validate(ctx context.Context, a admission.Attributes) error {
	for _, p := range c {
		if p.Validate == nil || (p.Handles != nil && !p.Handles(a.GetOperation())) {
			continue
		}
		if err := p.Validate(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// admissionAttributes builds the attributes of one request on the
// Store's resource. kind and subresource are the request's (a Scale for
// */scale); options are the request's options object (CreateOptions,
// UpdateOptions, DeleteOptions), as webhooks see them.
func (s *Store) admissionAttributes(ctx context.Context, op admission.Operation, obj, old runtime.Object, namespace, name, subresource string, options runtime.Object, dryRun bool) admission.Attributes {
	kind := s.strategy.Kind
	if sub := s.strategy.Subresources[subresource]; sub != nil && !sub.Kind.Empty() {
		kind = sub.Kind
	}
	u, _ := genericapirequest.UserFrom(ctx)
	return admission.NewAttributesRecord(obj, old, kind, namespace, name, s.strategy.GroupVersionResource(), subresource, op, options, dryRun, u)
}

// AdmitConnect is admission of a CONNECT of a streaming subresource
// (pods/exec, attach, portforward), as upstream's ConnectResource runs it
// before connecting: the mutating, then the validating plugins see the
// request's options (a PodExecOptions, of kind kind) as the object, so a
// webhook or policy on CONNECT may refuse it. Nothing is written.
func (s *Store) AdmitConnect(ctx context.Context, namespace, name, subresource string, opts runtime.Object, kind schema.GroupVersionKind) error {
	if s.admission == nil {
		return nil
	}
	u, _ := genericapirequest.UserFrom(ctx)
	// Fresh attributes for each phase, as upstream's.
	attributes := func() admission.Attributes {
		return admission.NewAttributesRecord(opts, nil, kind, namespace, name, s.strategy.GroupVersionResource(), subresource, admission.Connect, nil, false, u)
	}
	if err := s.admitMutating(ctx, attributes()); err != nil {
		return err
	}
	return s.admitValidating(ctx, attributes())
}

// admitMutating runs mutating admission when the Store has a chain.
func (s *Store) admitMutating(ctx context.Context, a admission.Attributes) error {
	if s.admission == nil {
		return nil
	}
	return admissionError(a, s.admission.Admit(ctx, a))
}

// admitValidating runs validating admission when the Store has a chain.
func (s *Store) admitValidating(ctx context.Context, a admission.Attributes) error {
	if s.admission == nil {
		return nil
	}
	return admissionError(a, s.admission.Validate(ctx, a))
}

// admissionError is upstream's: a plugin's API status error goes as it
// is, anything else as a 403 naming the request.
func admissionError(a admission.Attributes, err error) error {
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	return admission.NewForbidden(a, err)
}
