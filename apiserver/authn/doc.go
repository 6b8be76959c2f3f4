// Package authn authenticates API requests by bearer token, as an
// http middleware in front of the API server's handlers.
//
// A request carries its token in "Authorization: Bearer <token>" (the header
// parsing is upstream's, k8s.io/apiserver/pkg/authentication/request/bearertoken).
// client-go sends that header on WebSocket upgrades too; the browser-style
// token in a WebSocket subprotocol is not accepted (upstream's parser for
// it pulls in a module Kite does not otherwise need).
// Tokens are compared in constant time (SHA-256 digests compared with
// crypto/subtle, over every configured token), so timing reveals neither a
// prefix nor which token nearly matched.
//
// What gets 401, decided as kube-apiserver does when anonymous requests are
// allowed only on the health endpoints (its structured authentication
// configuration with anonymous conditions on /healthz, /livez, /readyz):
//
//   - a request with a valid token passes, with its user in the context
//     (k8s.io/apiserver/pkg/endpoints/request.UserFrom) and the credential
//     removed from the headers so nothing downstream can leak it;
//   - a request with a wrong token gets 401 on every path, health included,
//     because upstream fails on an authenticator error before it falls
//     back to anonymous;
//   - a request with no token passes only on /healthz, /livez, /readyz and
//     their subpaths (/readyz/etcd, ...), as user system:anonymous; every
//     other path, /version, /openapi, /metrics and discovery included,
//     gets 401 (upstream lets anonymous read /version only when anonymous
//     auth is fully enabled, which Kite does not do).
//
// A 401 is a metav1.Status in JSON ({"reason":"Unauthorized","code":401,
// "message":"Unauthorized"}), as upstream writes it; an unauthenticated
// HTTP/2 connection is also told to close, as upstream does to bound abuse.
//
// How the apiserver wires it, outermost after panic recovery:
//
//	a, err := authn.New(authn.Options{Tokens: []authn.Token{authn.Admin(token)}})
//	handler = a.Wrap(handler)
package authn
