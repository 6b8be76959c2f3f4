// Package apiextensions serves apiextensions.k8s.io/v1
// CustomResourceDefinitions: their Strategy (upstream's validation,
// generation and storedVersions rules, deletion through the
// customresourcecleanup finalizer) and the loop that names, establishes
// and cleans them up (upstream's naming, establishing and finalizer
// controllers), which tells its Installer when a CRD's resource is to be
// served and when no longer.
//
// The loop reads and writes through the CRDs' registry Store, as the
// namespace deleter does; it belongs with the other control loops
// (controllers/) once that home exists.
package apiextensions
