// Package prober runs the node agent's container probes: liveness,
// readiness and startup, each by exec, httpGet, tcpSocket or grpc, with
// upstream kubelet's timing, thresholds, results and events, so that a
// pod's readiness, restarts and `kubectl describe pod` read as on a real
// node. See docs/probes.md.
//
// It has three layers:
//   - Checker runs one check of a probe spec against a container and
//     reports upstream's outcome and output;
//   - Tick and Record are the per-probe state machine as pure functions:
//     initial results, initial delay, startup gating the other two,
//     thresholds, holding after a verdict that ends the container;
//   - Manager owns one worker goroutine per probe per container, fed by
//     UpdatePod with the pod worker's status, and publishes changed
//     results on Updates, through Readiness and Started (by pod and
//     container name) and through Results (by container instance).
//
// The prober decides nothing about containers: a liveness or startup
// Failure on Updates is the pod worker's cue to kill the container and
// restart it per its policy, recording a Killing event with KillMessage.
package prober
