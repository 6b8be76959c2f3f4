// Package validation checks apps/v1 objects (Deployments, ReplicaSets,
// ControllerRevisions) as upstream's pkg/apis/apps/validation does, with
// its field paths and messages.
package validation
