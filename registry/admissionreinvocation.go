package registry

import (
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
)

// Reinvocations is what one mutating plugin with reinvocationPolicy
// (MutatingAdmissionWebhook, MutatingAdmissionPolicy) keeps across the two
// passes of Chain.Admit for one request, in the attributes' reinvocation
// context: upstream's webhookReinvokeContext and policyReinvokeContext,
// which are the same but for the key (a webhook's configuration, name and
// index; a policy's binding and parameter).
type Reinvocations struct {
	attrs admission.Attributes
	// lastOutput is the object as the plugin left it on the first pass.
	lastOutput runtime.Object
	// invoked are the IfNeeded ones called since the last change;
	// reinvoke those to call again on the second pass.
	invoked, reinvoke sets.Set[string]
	second            bool
}

// BeginReinvocations starts plugin's pass over a's object: it returns the
// plugin's state, made on the first pass. On the second pass, when the
// object changed since the plugin's first pass (a later plugin, or an
// earlier one on this pass, changed it), every IfNeeded one called on the
// first pass is to be called again, as upstream's. End must be called
// when the pass is over.
func BeginReinvocations(a admission.Attributes, plugin string) *Reinvocations {
	rc := a.GetReinvocationContext()
	r, _ := rc.Value(plugin).(*Reinvocations)
	if r == nil {
		r = &Reinvocations{attrs: a}
		rc.SetValue(plugin, r)
	}
	r.second = rc.IsReinvoke()
	if r.second && !apiequality.Semantic.DeepEqual(r.lastOutput, a.GetObject()) {
		r.requireReinvoking()
	}
	return r
}

// End records the object as the plugin's pass left it.
func (r *Reinvocations) End() {
	if obj := r.attrs.GetObject(); obj != nil {
		r.lastOutput = obj.DeepCopyObject()
		return
	}
	r.lastOutput = nil
}

// Skip says whether key is left out on this pass: on the second pass,
// everything but what is to be reinvoked (a webhook or policy not called
// on the first pass is not called on the second either, as upstream's).
func (r *Reinvocations) Skip(key string) bool {
	return r.second && !r.reinvoke.Has(key)
}

// Called records that key was called: when it changed the object, the
// IfNeeded ones called before it are to be reinvoked and the chain is to
// run a second pass; when it is IfNeeded itself, it is reinvoked after a
// later change.
func (r *Reinvocations) Called(key string, changed, ifNeeded bool) {
	if changed {
		r.requireReinvoking()
		r.attrs.GetReinvocationContext().SetShouldReinvoke()
	}
	if ifNeeded {
		if r.invoked == nil {
			r.invoked = sets.New[string]()
		}
		r.invoked.Insert(key)
	}
}

// Patched records that a policy applied a patch on this pass, whether or
// not the patch changed anything: upstream's policy dispatcher then (its
// versioned attributes "dirty" at the end of the pass) reinvokes every
// IfNeeded one called so far, the patching one included, and makes the
// chain run its second pass.
func (r *Reinvocations) Patched() {
	r.requireReinvoking()
	r.attrs.GetReinvocationContext().SetShouldReinvoke()
}

func (r *Reinvocations) requireReinvoking() {
	if len(r.invoked) == 0 {
		return
	}
	if r.reinvoke == nil {
		r.reinvoke = sets.New[string]()
	}
	r.reinvoke = r.reinvoke.Union(r.invoked)
	r.invoked = nil
}
