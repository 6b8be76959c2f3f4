// Package apiextensions serves apiextensions.k8s.io/v1
// CustomResourceDefinitions and their custom resources: the CRDs'
// Strategy (upstream's validation, generation and storedVersions rules,
// deletion through the customresourcecleanup finalizer) and the Strategy,
// Table columns, scale subresource and OpenAPI schema of each served
// version of a CRD.
//
// Naming, establishing and cleaning up CRDs is a control loop, a client
// of the API like the others: controllers/crd.
package apiextensions
