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
// Encoding, and where the watch cache's bytes come in: responses and
// watch events are encoded by the codec factory's serializers, which
// write an object implementing runtime.CacheableObject from its cached
// bytes (CacheEncode), so a watch cache that hands out such objects has
// every event encoded once per wire format, not once per watcher. Lists
// are encoded item by item (streaming collection encoding) into a
// deferred writer, never built in memory as a whole response. Objects
// given to the Server may be shared between requests: they must carry
// their apiVersion and kind (or be CacheableObjects), so that encoding
// never has to set them.
//
// Every request goes through one short pipeline that reads top to bottom:
// Server.ServeHTTP recovers from panics and authenticates; serve routes
// (fixed paths, then resources); serveResource resolves the resource,
// checks the verb, negotiates the response form, bounds the request by
// its timeout (watches by timeoutSeconds) and counts it in the metrics;
// dispatch runs the verb, whose handler reads the body (at most 3 MiB)
// and calls the registry. No lock is held while writing to a connection.
package apiserver
