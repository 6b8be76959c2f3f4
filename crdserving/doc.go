// Package crdserving serves custom resources as the CustomResourceDefinition
// objects say, inside the API server: a follower of the CRDs' Store
// (in process, through the watch cache) installs one storage stack per
// served version of an Established CRD into a resourceset.Set, marks it
// terminating and removes it when the CRD goes; the CRD controller
// (controllers/crd, a client of the API) names, establishes and cleans up
// the CRDs; Tables gives custom resources their CRDs' printer columns;
// Ensure and ReadFiles install the CRDs kite.Options names before Start
// returns (docs/crds.md).
package crdserving
