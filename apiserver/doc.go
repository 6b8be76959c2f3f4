// Package apiserver is Kite's HTTP surface: the Kubernetes REST API that
// kubectl and client-go use, over registry Stores.
//
// One Server serves /api and /apis (legacy and aggregated discovery, and
// the resources), /version, /healthz, /livez and /readyz. Requests and
// responses are JSON, YAML or protobuf, negotiated as upstream does;
// watches stream over chunked HTTP with JSON or length-prefixed protobuf
// frames. Errors are metav1.Status objects with upstream's codes and
// reasons.
//
// Every request goes through one short pipeline, Server.ServeHTTP, that
// reads top to bottom: recover, authenticate, route, limit the body,
// dispatch by verb. No lock is held while writing to a connection.
package apiserver
