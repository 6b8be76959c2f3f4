// Package webhook calls admission webhooks as kube-apiserver does
// (k8s.io/apiserver/pkg/admission/plugin/webhook is the reference; its
// dispatchers reach client-go informers, so the calls are Kite's own,
// built on upstream's rule matcher, match-condition evaluator and webhook
// client manager):
//
//   - configurations are read from the server's own stores (the watch
//     caches of mutatingwebhookconfigurations and
//     validatingwebhookconfigurations), never through a client;
//   - a webhook is called when a rule matches the request (operation,
//     group, version, resource/subresource, scope), its namespaceSelector
//     matches the labels of the request's namespace (of the namespace
//     itself for namespaces), its objectSelector those of the object or
//     the old object, and its matchConditions (CEL) hold;
//   - requests on admissionregistration.k8s.io are never sent to webhooks;
//   - a dry-run request fails on a webhook whose sideEffects is not None
//     or NoneOnDryRun;
//   - the AdmissionReview is v1 or v1beta1, the first of the webhook's
//     admissionReviewVersions Kite speaks; a mutating webhook's JSONPatch
//     is applied to the object; warnings go out as Warning headers; a
//     denial is upstream's status error ("admission webhook %q denied the
//     request: ..."), with the webhook's code; a call that fails or
//     times out (timeoutSeconds, 10 by default) fails the request under
//     failurePolicy Fail and is skipped under Ignore;
//   - mutating webhooks run in order, and those with reinvocationPolicy
//     IfNeeded run once more, on the admission chain's second pass
//     (registry.Chain), when a later webhook, or on that pass a policy or
//     built-in plugin, changed the object;
//     validating webhooks run in parallel;
//   - clients are cached per client configuration (upstream's
//     ClientManager), so connections are kept alive and reused; a Service
//     reference resolves through the Service's ready EndpointSlice
//     endpoints when that resource is served, else to its clusterIP
//     (Resolver).
//
// Under matchPolicy Equivalent (v1's default) a webhook whose rules miss
// the request's resource is called when they match an equivalent one
// (Options.Equivalents: served over the same storage), with the objects
// converted to that resource's kind and a mutating webhook's patch
// converted back.
package webhook
