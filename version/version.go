// Package version is the Kubernetes version Kite reports, in one place:
// the API server's /version and the agent's Node (kubeletVersion) say the
// same.
package version

// Major, Minor and GitVersion are those of the k8s.io modules whose API
// Kite serves.
const (
	Major      = "1"
	Minor      = "37"
	GitVersion = "v1.37.2+kite"
)
