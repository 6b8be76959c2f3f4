// Package validation checks coordination.k8s.io/v1 objects (leases) as
// kube-apiserver does, following kubernetes/kubernetes
// pkg/apis/coordination/validation, and returns upstream's field errors.
package validation
