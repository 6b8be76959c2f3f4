// Package validation is upstream's validation of networking.k8s.io/v1
// ServiceCIDRs and IPAddresses (pkg/apis/networking/validation), with its
// field paths and messages.
package validation
