// Package policy evaluates admission policies as kube-apiserver 1.37 does
// (k8s.io/apiserver/pkg/admission/plugin/policy/{generic,validating,
// mutating,matching} is the reference; its plugins reach client-go
// informers and dynamic clients, so the dispatch here is Kite's own, over
// upstream's CEL compiler and evaluators, rule matcher, match-condition
// evaluator and mutation patchers):
//
//   - policies and bindings are read from the server's own watch caches
//     on every request (resourceVersion "0": no round trip to etcd), so a
//     change is in force as soon as the cache has it; each policy is
//     compiled once per resourceVersion;
//   - a policy runs for a request when its matchConstraints match
//     (resourceRules with resourceNames, excludeResourceRules,
//     matchPolicy Equivalent through equivalent resources, namespaceSelector,
//     objectSelector) and, for each binding naming it whose matchResources
//     match too, once per parameter object its paramRef selects (none:
//     parameterNotFoundAction Allow skips the binding, Deny fails it);
//   - then its matchConditions decide, its variables are composed, and
//     (ValidatingAdmissionPolicy) its validations, messageExpressions and
//     auditAnnotations are evaluated, a failed validation acting as the
//     binding's validationActions say: Deny refuses the request with
//     upstream's message and the validation's reason, Warn adds a Warning
//     header, Audit an audit annotation; or (MutatingAdmissionPolicy) its
//     mutations, ApplyConfiguration and JSONPatch, change the object;
//   - a policy that cannot be evaluated (a CEL error, a parameter that
//     cannot be found, a configuration error) fails the request under
//     failurePolicy Fail and is left out under Ignore;
//   - requests on the policies and bindings themselves and on access
//     reviews are never subject to policies, as upstream.
package policy
