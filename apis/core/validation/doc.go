// Package validation checks core/v1 objects as kube-apiserver does before it
// stores them, and returns the problems as a field.ErrorList whose paths,
// types and messages are upstream's, so that a caller can answer 422 with
// apierrors.NewInvalid(groupKind, name, errs) and clients see exactly what
// kube-apiserver would have said.
//
// It follows kubernetes/kubernetes pkg/apis/core/validation/validation.go,
// written directly on the k8s.io/api/core/v1 types. Objects are expected to
// be defaulted first (package apis/core/defaults), as upstream validates
// after defaulting: an undefaulted pod fails on its empty restartPolicy,
// dnsPolicy, imagePullPolicy and so on, exactly as upstream would.
//
// Field paths are those of the JSON fields (upstream uses the internal
// type's field names, which match the v1 JSON names for everything here).
// Each exported function says which upstream rules it leaves out.
package validation
